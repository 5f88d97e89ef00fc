"""A driver script: the loop lives here, the work in the methods of another module."""

from . import solver


def reconstruct(trial, steps):
    # a driver with loops of its own, called once per trial: what it calls outside its
    # loops (building the solver, preparing it) runs once per trial, not per step
    s = solver.Solver(64)
    s.prepare()
    for i in range(steps):
        s.step(i)
        s.log()


def main(trials, steps):
    for trial in range(trials):
        reconstruct(trial, steps)
