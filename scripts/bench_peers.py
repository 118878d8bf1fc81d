#!/usr/bin/env python3
"""Times mg-preprocess against the fastest exact BPE tokenizers, one core each, cold and warm.

Tokenizers: GPT-2 (r50k), cl100k_base, o200k_base, Llama-3 and Qwen3 (the ones gigatoken and
quicktok-v1 both or either support). Contenders, each in its own process, per round:

  mg-preprocess     the whole tool, JSONL in, .bin/.idx out, --workers 1 (its reader and
                    writer threads count: CPU time of the process). Cold: the corpus once;
                    warm: CPU(corpus given twice, --input C --input C) - CPU(corpus once),
                    i.e. the second pass of one process.
  mg encoder        tests/tools/encode_bench: the decoded texts in memory, the mg_encode loop
                    alone (like the peers' batch calls), --passes 2 (cold, then warm).
  gigatoken         Tokenizer.encode_batch(texts, parallel=False), RAYON_NUM_THREADS=1: its
                    native batch API on the decoded texts; called twice on one tokenizer
                    object (cold, then warm: its pre-token caches filled).
  quicktok          get_encoding(...).encode_batch(texts, 1, True): native batch API, one
                    thread, special tokens matched; called twice (quicktok has no cache).

Every round runs the contenders one after the other in this order (alternated, so a load
change on a shared machine hits all of them), and each contender is reported by its fastest
round (CPU seconds: user + system of its process while it encodes). MB = 10^6 bytes of
document text (UTF-8 of the "text" values). The reference library (tiktoken for the OpenAI
encodings, HF tokenizers for Llama-3 and Qwen3) runs once, untimed against the others, to
check ids: every id of mg_encode, gigatoken and quicktok over the whole corpus is compared
with the reference's, and mg-preprocess's .bin with mg_encode's ids (plus eod). A mismatch
of ours fails the run (exit 1); a peer that differs from the reference is reported (its bug).

    bench_peers.py --corpus C.jsonl --bin BIN --encode-bench EB --vocab VOCAB
                   [--rounds 3] [--mb N] [--only gpt2,cl100k,o200k,llama3,qwen3]
(run by scripts/bench-tokenizers.sh --peers, part of `make bench`)
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_preprocess import load_texts  # noqa: E402  (shared helpers)
from bench_tokenizers import head_corpus  # noqa: E402

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

# name -> (label, mg flags, reference, gigatoken source, quicktok encoding or None)
TOKENIZERS = {
    "gpt2": ("GPT-2 / r50k", ["--tokenizer-type", "GPT2BPETokenizer",
                              "--vocab-file", "{v}/gpt2/gpt2-vocab.json",
                              "--merge-file", "{v}/gpt2/gpt2-merges.txt"],
             "tiktoken:r50k_base", "tiktoken:r50k_base", None),
    "cl100k": ("cl100k_base", ["--tokenizer-type", "TikTokenizer", "--tokenizer-model",
                               "{v}/tiktoken/cl100k_base.tiktoken",
                               "--tiktoken-pattern", "cl100k_base"],
               "tiktoken:cl100k_base", "tiktoken:cl100k_base", "cl100k_base"),
    "o200k": ("o200k_base", ["--tokenizer-type", "TikTokenizer", "--tokenizer-model",
                             "{v}/tiktoken/o200k_base.tiktoken",
                             "--tiktoken-pattern", "o200k_base"],
              "tiktoken:o200k_base", "tiktoken:o200k_base", "o200k_base"),
    # no BOS: gigatoken's and quicktok's batch APIs add none, so all give the same ids
    "llama3": ("Llama-3", ["--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model",
                           "{v}/hf/llama3", "--tokenizer-hf-no-include-special-tokens"],
               "hf:llama3", "hf:llama3", "llama3"),
    "qwen3": ("Qwen3", ["--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model",
                        "{v}/hf/qwen3", "--tokenizer-hf-no-include-special-tokens"],
              "hf:qwen3", "hf:qwen3", "qwen3"),
}
def resident_mb():
    """Resident memory of this process now (VmRSS), MB."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


# ---- peers (run in a child process: python bench_peers.py --peer P --tok T ...) ----

def tiktoken_encoding(vocab, name):
    """tiktoken's Encoding `name` from openai_public's definition and the local ranks file."""
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe
    from tiktoken_ext import openai_public
    ranks = load_tiktoken_bpe(os.path.join(vocab, "tiktoken", name + ".tiktoken"))
    orig = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = lambda *a, **k: ranks
    try:
        spec = getattr(openai_public, name)()
    finally:
        openai_public.load_tiktoken_bpe = orig
    return tiktoken.Encoding(spec["name"], pat_str=spec["pat_str"], mergeable_ranks=ranks,
                             special_tokens=spec["special_tokens"])


def peer_batch(peer, source, vocab):
    """A function texts -> (flat uint32 ids, per-text counts) using the peer's batch API."""
    import numpy as np
    kind, _, name = source.rpartition(":")
    if peer == "gigatoken":
        import awkward as ak
        import gigatoken
        if kind == "tiktoken":
            tok = gigatoken.Tokenizer.from_tiktoken(
                os.path.join(vocab, "tiktoken", name + ".tiktoken"))
        else:
            tok = gigatoken.Tokenizer(os.path.join(vocab, "hf", name))

        def run(texts):
            out = tok.encode_batch(texts, parallel=False)
            return out, lambda: (ak.flatten(out).to_numpy().astype(np.uint32),
                                 ak.num(out).to_numpy())
        return run
    if peer == "quicktok":
        import quicktok
        enc = quicktok.get_encoding(source)

        def run(texts):
            toks, offsets = enc.encode_batch(texts, 1, True)
            return toks, lambda: (np.asarray(toks, dtype=np.uint32), np.diff(offsets))
        return run
    if kind == "tiktoken":  # reference
        enc = tiktoken_encoding(vocab, name)

        def run(texts):
            out = enc.encode_batch(texts, num_threads=1, allowed_special="all")
            return out, lambda: flatten_lists(out)
        return run
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(vocab, "hf", name, "tokenizer.json"))

    def run(texts):
        out = [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]
        return out, lambda: flatten_lists(out)
    return run


def flatten_lists(lists):
    import numpy as np
    counts = np.fromiter((len(x) for x in lists), dtype=np.int64, count=len(lists))
    flat = np.fromiter((i for x in lists for i in x), dtype=np.uint32, count=int(counts.sum()))
    return flat, counts


def run_peer(a):
    """Child process: cold and warm passes of one peer; ids saved if asked; JSON on stdout."""
    import numpy as np
    texts = load_texts(a.corpus)
    run = peer_batch(a.peer, a.source, a.vocab)
    rss0 = resident_mb()
    times = []
    for i in range(a.passes):
        c0 = time.process_time()
        out, materialize = run(texts)
        times.append(time.process_time() - c0)
        if i + 1 < a.passes or not a.ids_out:
            del out, materialize
    res = {"cold": times[0], "warm": min(times[1:]) if len(times) > 1 else None,
           "resident_growth_mb": resident_mb() - rss0}
    if a.ids_out:
        flat, counts = materialize()
        np.save(a.ids_out + ".ids.npy", flat)
        np.save(a.ids_out + ".counts.npy", np.asarray(counts, dtype=np.int64))
    print(json.dumps(res))


# ---- the parent ----

def timed_child(cmd):
    """(CPU seconds user+sys, peak RSS MB) of cmd, a child process run to its end, as GNU
    time reports them (a child forked or spawned from this process would count this
    process's pages in its peak RSS)."""
    with tempfile.NamedTemporaryFile("r") as f:
        subprocess.run(["/usr/bin/time", "-f", "%U %S %M", "-o", f.name] + cmd, check=True,
                       stdout=subprocess.DEVNULL)
        user, system, kb = f.read().split()[-3:]
    return float(user) + float(system), int(kb) / 1024


def mg_flags(name, vocab):
    return [f.replace("{v}", vocab) for f in TOKENIZERS[name][1]]


def remove_outputs(work):
    """Deletes the dataset of the run before. A run that replaces an existing output keeps
    the old file's page-cache pages until its final rename, so the new file's pages are
    pages the kernel takes fresh; on this benchmark's VM a fresh page costs ~2.5 us of
    system time at its first write (a 133 MB .bin: +0.15-0.35 s, measured with dd too),
    while a new file reuses the freed pages. A user's run writes a new dataset."""
    for f in os.listdir(work):
        if f.startswith("out"):
            os.remove(os.path.join(work, f))


def mg_preprocess(a, name, work, copies):
    remove_outputs(work)
    cmd = [os.path.join(a.bin, "mg-preprocess"), "--output-prefix", os.path.join(work, "out"),
           "--workers", "1", "--quiet", "--append-eod"] + mg_flags(name, a.vocab)
    for _ in range(copies):
        cmd += ["--input", a.corpus]
    return timed_child(cmd)


def encode_bench(a, name, ids_out=None):
    cmd = [a.encode_bench, "--passes", "2"] + mg_flags(name, a.vocab)
    if ids_out:
        cmd += ["--ids-out", ids_out]
    with open(a.corpus, "rb") as f:
        out = subprocess.run(cmd, stdin=f, check=True, capture_output=True, text=True).stdout
    fields = dict(kv.split("=") for kv in out.split())
    return float(fields["cpu_s"]), float(fields["warm_cpu_s"]), int(fields["ids"])


def peer(a, which, source, ids_out=None, passes=2):
    cmd = [sys.executable, os.path.abspath(__file__), "--peer", which, "--source", source,
           "--corpus", a.corpus, "--vocab", a.vocab, "--passes", str(passes)]
    if ids_out:
        cmd += ["--ids-out", ids_out]
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def check_ids(a, name, work):
    """Compares every id of mg_encode, gigatoken and quicktok (and mg-preprocess's .bin)
    with the reference library's; returns a list of error lines."""
    import numpy as np
    label, _, ref, giga, quick = TOKENIZERS[name]
    errors = []
    path = os.path.join(work, "mg.u32")
    encode_bench(a, name, ids_out=path)
    raw = np.fromfile(path, dtype=np.uint32)
    with open(a.corpus, encoding="utf-8") as f:
        n_docs = sum(1 for _ in f)
    mg_counts, mg_ids = raw[:n_docs].astype(np.int64), raw[n_docs:]
    t0 = time.perf_counter()
    peer(a, "reference", ref, ids_out=os.path.join(work, "ref"), passes=1)
    ref_ids = np.load(os.path.join(work, "ref.ids.npy"))
    ref_counts = np.load(os.path.join(work, "ref.counts.npy"))
    print(f"  ids: reference {ref.split(':')[0]} encoded {ref_ids.size} ids "
          f"({time.perf_counter() - t0:.0f} s)", flush=True)
    contenders = [("mg_encode", mg_ids, mg_counts)]
    for which, src in (("gigatoken", giga), ("quicktok", quick)):
        if src is None:
            continue
        peer(a, which, src, ids_out=os.path.join(work, which), passes=1)
        contenders.append((which, np.load(os.path.join(work, which + ".ids.npy")),
                           np.load(os.path.join(work, which + ".counts.npy"))))
    for who, ids, counts in contenders:
        if np.array_equal(counts, ref_counts) and np.array_equal(ids, ref_ids):
            print(f"  ids: {who} == reference on all {len(counts)} documents", flush=True)
            continue
        bad = differing_documents(ids, counts, ref_ids, ref_counts)
        if who != "mg_encode":  # the peer's own bug: reported, not ours to fail on
            print(f"  ids: note: {who} differs from the reference on {len(bad)} of "
                  f"{len(counts)} documents (first: document {bad[0]}); mg_encode does not",
                  flush=True)
            continue
        errors.append(f"error: {label}: {who} ids differ from the reference on {len(bad)} "
                      f"documents (first: document {bad[0]})")
        print("  " + errors[-1], flush=True)
    errors += check_bin(a, name, work, mg_ids, mg_counts)
    return errors


def differing_documents(ids, counts, ref_ids, ref_counts):
    """Indices of the documents whose ids differ (both given flat, with per-document counts)."""
    import numpy as np
    a, b = np.concatenate([[0], np.cumsum(counts)]), np.concatenate([[0], np.cumsum(ref_counts)])
    return [i for i in range(len(counts))
            if counts[i] != ref_counts[i] or not np.array_equal(ids[a[i]:a[i + 1]],
                                                                ref_ids[b[i]:b[i + 1]])]


def check_bin(a, name, work, ids, counts):
    """mg-preprocess's .bin == mg_encode's ids with eod after each non-empty document."""
    import numpy as np
    mg_preprocess(a, name, work, 1)
    prefix = os.path.join(work, "out_text_document")
    with open(prefix + ".idx", "rb") as f:
        code = f.read(18)[17]  # magic (9 bytes), version (<Q), dtype code (<B)
    dtype = {4: np.int32, 8: np.uint16}[code]
    got = np.fromfile(prefix + ".bin", dtype=dtype).astype(np.int64)
    eod = int(got[-1]) if got.size else 0
    ends = np.cumsum(counts)
    nonempty = counts > 0
    want = np.insert(ids.astype(np.int64), ends[nonempty], eod)
    if np.array_equal(got, want):
        print(f"  ids: mg-preprocess .bin == mg_encode ids + eod on every document", flush=True)
        return []
    msg = f"error: {TOKENIZERS[name][0]}: mg-preprocess .bin differs from mg_encode's ids"
    print("  " + msg, flush=True)
    return [msg]


def bench_one(a, name, work, mb):
    label, _, ref, giga, quick = TOKENIZERS[name]
    best = {}

    def keep(key, secs):
        if secs is not None and (key not in best or secs < best[key]):
            best[key] = secs
    rss = {}
    for r in range(a.rounds):
        one, rss1 = mg_preprocess(a, name, work, 1)
        two, _ = mg_preprocess(a, name, work, 2)
        keep("mg-preprocess cold", one)
        keep("mg-preprocess 2 passes", two)
        rss["mg-preprocess"] = max(rss.get("mg-preprocess", 0), rss1)
        cold, warm, _ = encode_bench(a, name)
        keep("mg encoder cold", cold)
        keep("mg encoder warm", warm)
        line = [f"mg-pp {mb / one:6.1f}/{mb / max(two - one, 1e-9):6.1f}",
                f"mg-enc {mb / cold:6.1f}/{mb / warm:6.1f}"]
        for which, src in (("gigatoken", giga), ("quicktok", quick)):
            if src is None:
                continue
            res = peer(a, which, src)
            keep(f"{which} cold", res["cold"])
            keep(f"{which} warm", res["warm"])
            rss[which] = max(rss.get(which, 0), res["resident_growth_mb"])
            line.append(f"{which} {mb / res['cold']:6.1f}/{mb / res['warm']:6.1f}")
        print(f"  round {r + 1} MB/s cold/warm: " + "  ".join(line), flush=True)
    best["mg-preprocess warm"] = max(best["mg-preprocess 2 passes"] - best["mg-preprocess cold"],
                                     1e-9)
    print(f"  {'contender':22s} {'cold s':>7s} {'MB/s':>7s} {'warm s':>7s} {'MB/s':>7s}")
    for who in ("mg-preprocess", "mg encoder", "gigatoken", "quicktok"):
        if f"{who} cold" not in best:
            continue
        c, w = best[f"{who} cold"], best[f"{who} warm"]
        print(f"  {who:22s} {c:7.2f} {mb / c:7.1f} {w:7.2f} {mb / w:7.1f}")
    for who in ("mg-preprocess", "mg encoder"):
        for peer_name in ("gigatoken", "quicktok"):
            if f"{peer_name} cold" not in best:
                continue
            rc = best[f"{peer_name} cold"] / best[f"{who} cold"]
            rw = best[f"{peer_name} warm"] / best[f"{who} warm"]
            print(f"  {who} / {peer_name}: cold {rc:.2f}x, warm {rw:.2f}x")
    print("  peak RSS MB: mg-preprocess (whole process) %.0f; resident growth of the peers "
          "after their passes, outputs freed: %s" % (
        rss["mg-preprocess"], ", ".join(f"{k} {v:.0f}" for k, v in rss.items()
                                        if k != "mg-preprocess")), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--vocab", required=True)
    ap.add_argument("--bin")
    ap.add_argument("--encode-bench")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--mb", type=float, help="only the first documents holding N MB of text")
    ap.add_argument("--only", help="comma-separated names: " + ",".join(TOKENIZERS))
    ap.add_argument("--no-check", action="store_true", help="skip the id comparison")
    # child mode
    ap.add_argument("--peer", help=argparse.SUPPRESS)
    ap.add_argument("--source", help=argparse.SUPPRESS)
    ap.add_argument("--passes", type=int, default=2, help=argparse.SUPPRESS)
    ap.add_argument("--ids-out", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.peer:
        return run_peer(a)
    if not a.bin or not a.encode_bench:
        ap.error("--bin and --encode-bench are required")
    names = a.only.split(",") if a.only else list(TOKENIZERS)
    for n in names:
        if n not in TOKENIZERS:
            ap.error(f"unknown tokenizer {n}")
    errors = []
    with tempfile.TemporaryDirectory() as work:
        if a.mb:
            a.corpus = head_corpus(a.corpus, a.mb, os.path.join(work, "corpus.jsonl"))
        texts = load_texts(a.corpus)
        mb = sum(len(t.encode("utf-8", "surrogatepass")) for t in texts) / 1e6
        del texts
        from importlib.metadata import version
        print(f"corpus: {a.corpus}, {mb:.1f} MB of text; {os.cpu_count()} cores, one per "
              f"contender; {a.rounds} rounds, each contender by its fastest; CPU seconds; "
              f"gigatoken {version('gigatoken')}, quicktok-v1 {version('quicktok-v1')}; load average {os.getloadavg()[0]:.1f}",
              flush=True)
        for name in names:
            print(f"{TOKENIZERS[name][0]}:", flush=True)
            if not a.no_check:
                errors += check_ids(a, name, work)
            bench_one(a, name, work, mb)
    for e in errors:
        print(e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
