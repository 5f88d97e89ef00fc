"""A function of the file called once per item of a loop over some data, with the item
(`for edge_index in graphs: negatives(edge_index)`), runs per item: what it reads on the
host outside loops of its own is a wait per item, loops of its own or not. (Called from a
loop with the same arguments each time, a function with loops of its own is the outer
level, and a read outside its loops is once per call.)

What a helper returns in a tuple is judged part by part: a part its body computes from
plain numbers (`population = n * n`) is no GPU value because another part is."""

import torch

device = torch.device("cuda")


def to_vector(edge_index, num_nodes):
    idx = (edge_index[0] * num_nodes + edge_index[1]).to(device)
    population = num_nodes * num_nodes
    return idx, population


def negatives(edge_index, num_nodes):
    idx, population = to_vector(edge_index, num_nodes)
    if idx.numel() >= population:  # must not: GPU001
        return None
    known = idx.to("cpu")  # expect: GPU001
    drawn = []
    for _ in range(3):
        drawn.append(torch.randint(population, (len(known),)))
    return drawn


def batched_negatives(graphs, num_nodes):
    return [negatives(edge_index, num_nodes) for edge_index in graphs]


def summary(graph, num_nodes, rounds):
    totals = []
    for _ in range(rounds):
        totals.append(count(graph, num_nodes))
    return totals


def count(graph, num_nodes):
    edges = graph.to(device)
    total = edges.sum().item()  # must not: GPU001
    for _ in range(num_nodes):
        total += 1
    return total
