"""A clock read after a call of code the file does not show, handed the GPU work's results
(`postprocess(outputs, …)` with its mask gathers and NMS, `eval_model(actor, env)` reading
each episode's reward), may find nothing queued: that code may wait before it returns. Only
work queued after such a call, or with no such call, is still queued for sure. A function
named for what it does to a model (`eval_model`, `train_model`) is not the model's forward."""

import time

import torch
from helpers import eval_model, postprocess

device = torch.device("cuda")


def predict(model, loader):
    model = model.to(device)
    for image in loader:
        image = image.to(device, non_blocking=True)
        t0 = time.time()
        outputs = model(image)
        outputs = postprocess(outputs, 0.5)
        print("infer", time.time() - t0)  # must not: GPU004


def evaluate(actor, env, steps):
    actor = actor.to(device)
    for step in range(steps):
        start = time.time()
        reward = eval_model(actor, env, num_episodes=3)
        elapsed = time.time() - start  # must not: GPU004
        if step % 100 == 0:
            print(reward, elapsed)


def timed_forward(model, loader):
    model = model.to(device)
    for image in loader:
        image = image.to(device, non_blocking=True)
        t0 = time.time()
        outputs = postprocess(model(image), 0.5)
        outputs = outputs * 2
        print("infer", len(outputs), time.time() - t0)  # expect: GPU004
        t1 = time.time()
        logits = model(image)
        print(time.time() - t1)  # expect: GPU004
