"""Images/s of data-parallel training for 1-64 ranks, from measured compute
per step and a ring all-reduce model (docs/distributed.md explains it).

    /usr/bin/python3 bench/allreduce/scaling_model.py [--markdown]

Per step and rank: compute t_c = batch / (images/s of one rank); backward is
about 2/3 of it and the bucketed all-reduce runs under it, so
    t_step = t_c / 3 + max(2 t_c / 3, t_comm)
Ring all-reduce of S bytes over N ranks, link bandwidth B, latency a per hop:
    t_comm = 2 (N - 1) / N * S / B + 2 (N - 1) a
fp16 halves S. Sparse modes send (index, value) pairs, 8 bytes per value, to
every rank (an all-gather): t_comm = (N - 1) * spars * P * 8 / B + (N - 1) a.
"""
import sys

MODELS = {
    # name: (parameters, images/s of one rank, per-rank batch, where the rate comes from)
    "seed CNN (CPU core)": (431_080, 3860.0, 64, "measured here: singa train, 1 thread"),
    "ResNet-50 (CPU core)": (25_557_032, 3860.0 / 890, 32, "seed CNN rate scaled by FLOPs (890x)"),
    "ResNet-50 (GPU)": (25_557_032, 2500.0, 256, "assumed: one modern GPU, mixed precision"),
}
LINKS = {"10 Gbit/s": (10e9 / 8, 10e-6), "100 Gbit/s": (100e9 / 8, 3e-6)}
RANKS = [1, 2, 4, 8, 16, 32, 64]


def t_comm(n, params, bw, lat, mode, spars=0.01):
    if n == 1:
        return 0.0
    if mode == "sparseTopK":
        return (n - 1) * spars * params * 8 / bw + (n - 1) * lat
    size = params * (2 if mode == "fp16" else 4)
    return 2 * (n - 1) / n * size / bw + 2 * (n - 1) * lat


def images_per_second(n, model, link, mode):
    params, rate, batch, _ = MODELS[model]
    bw, lat = LINKS[link]
    tc = batch / rate
    step = tc / 3 + max(2 * tc / 3, t_comm(n, params, bw, lat, mode))
    return n * batch / step


def main():
    md = "--markdown" in sys.argv
    for model, (params, rate, batch, src) in MODELS.items():
        print(f"\n{model}: {params:,} parameters, {rate:.4g} img/s per rank at batch {batch} ({src})\n")
        for mode in ["fp32", "fp16", "sparseTopK"]:
            head = ["link", "mode"] + [f"{n} ranks" for n in RANKS]
            rows = []
            for link in LINKS:
                rows.append([link, mode + (" (spars 0.01)" if mode == "sparseTopK" else "")] +
                            [f"{images_per_second(n, model, link, mode):,.0f}" for n in RANKS])
            if md:
                if mode == "fp32":
                    print("| " + " | ".join(head) + " |")
                    print("|" + "---|" * len(head))
                for r in rows:
                    print("| " + " | ".join(r) + " |")
            else:
                for r in rows:
                    print("  ".join(f"{c:>12}" for c in r))


if __name__ == "__main__":
    main()
