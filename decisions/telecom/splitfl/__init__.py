"""Split-federated learning with a capability-aware split-point agent (issue 22), in progress.

Clients run a network up to a split point, the server runs the rest; the client parts are averaged
(FedAvg) each round (SFLV1). A split ``s`` is the number of client-side layers everywhere: ``s`` in
``[1, L - 1]`` for split training (``model.SplitNet.splits``), ``s = L`` in the cost model for the
whole network on the client (plain FedAvg).

Pieces so far: the split networks and their layer tables (``model``), split training with per-client
vmapped rounds and the split/unsplit equivalence check (``split``), digits and Fashion-MNIST with a
Dirichlet non-IID partition (``data``), device tiers with battery dynamics and the capability state
(``devices``), and the per-split round cost: compute, traffic, energy, memory, the straggler latency
(``costs``). Not yet registered as a domain: the DQN, the baselines, the job, bench and app page are next.
"""
