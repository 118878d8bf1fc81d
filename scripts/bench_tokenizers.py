#!/usr/bin/env python3
"""Times mg-preprocess per tokenizer type against the reference libraries, one core each.

Tokenizers: Llama-2, Llama-3 and Qwen3 tokenizer.json, a Unigram .model and its
tokenizer.json conversion, a BPE .model and a WordPiece vocab.txt (both trained on
botchan.txt and cached under ~/.cache/mgtools/bench).

For each tokenizer: mg-preprocess end to end (JSONL -> .bin/.idx, --workers 1), HF
`tokenizers` (1 thread: the backend tokenizer transformers' AutoTokenizer builds, as
Megatron's HuggingFaceTokenizer uses it) and `sentencepiece` where it applies, all on the
same documents in the same run. MB/s and the mg/reference ratios are printed (see
bench_preprocess.py for the accounting: the peers get decoded strings and are timed
encoding only, so the ratios are conservative for mg-preprocess).

A second mg row, "mg encoder only", is the like-for-like comparison with the libraries:
tests/tools/encode_bench holds the decoded texts in memory and times only the loop of
mg_encode calls (no JSON, no dataset writing), as the peers are timed. Its total number
of ids is compared with each peer's: a difference is printed as an error and fails the run.

Every id is checked: mg_encode's ids (encode_bench --ids-out) against the peer's, document
by document, and mg-preprocess's .bin against mg_encode's ids with the eod after each
non-empty document; a difference fails the run.

With --zh the corpus is Chinese text (scripts/make-zh-corpus.py) and the tokenizers are the
SentencePiece `.model` ones: a Unigram and a BPE model (8000 pieces, byte fallback) trained
by sentencepiece on that corpus and cached under ~/.cache/mgtools/bench, and test_ja_model.

Times are CPU seconds (user + system) of the mg-preprocess process and of the Python
process while it encodes: on a shared, oversubscribed machine wall-clock times measure the
neighbours; CPU time is what "per core" means. Wall-clock seconds are printed too. With
--rounds N every contender runs N times, alternated, and its fastest run is kept.

    bench_tokenizers.py --corpus C.jsonl --bin BIN --vocab VOCAB [--mb 20] [--only NAME]
                        [--rounds N] [--zh]
"""
import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_preprocess import load_texts  # noqa: E402  (shared helpers)


def cpu_mg(binary, corpus, args, prefix):
    """(CPU seconds, wall seconds) of mg-preprocess --workers 1 on corpus, writing prefix."""
    import resource
    import subprocess
    import time

    def children():
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime
    cmd = [binary, "--input", corpus, "--output-prefix", prefix,
           "--workers", "1", "--quiet", "--append-eod"] + args
    c0, t0 = children(), time.perf_counter()
    subprocess.run(cmd, check=True)
    return children() - c0, time.perf_counter() - t0


def cpu_encoder(tool, corpus, args, ids_out):
    """(CPU seconds of the encode loop, per-document id lists) of tests/tools/encode_bench
    on corpus (its --ids-out file: one uint32 count per document, then the ids)."""
    import subprocess

    import numpy as np
    with open(corpus, "rb") as f:
        out = subprocess.run([tool, "--ids-out", ids_out] + args, stdin=f, check=True,
                             capture_output=True, text=True).stdout
    fields = dict(kv.split("=") for kv in out.split())
    raw = np.fromfile(ids_out, dtype=np.uint32)
    n = int(fields["texts"])
    ends = np.cumsum(raw[:n].astype(np.int64))
    ids = np.split(raw[n:].astype(np.int64), ends[:-1]) if n else []
    return float(fields["cpu_s"]), ids


def cpu_peer(encode, texts):
    """(CPU seconds, wall seconds, per-document id lists) of encode over texts, one at a time."""
    import time

    c0, t0 = time.process_time(), time.perf_counter()
    out = [encode(t) for t in texts]
    return time.process_time() - c0, time.perf_counter() - t0, out


def first_difference(ids, ref):
    """Index of the first document whose ids differ (None if all are equal)."""
    if len(ids) != len(ref):
        return min(len(ids), len(ref))
    for i, (a, b) in enumerate(zip(ids, ref)):
        if len(a) != len(b) or any(int(x) != int(y) for x, y in zip(a, b)):
            return i
    return None


def bin_matches(prefix, ids):
    """mg-preprocess's prefix_text_document.bin == ids with the eod after each non-empty
    document (the eod read back from the .bin's last id)."""
    import numpy as np
    path = prefix + "_text_document"
    with open(path + ".idx", "rb") as f:
        code = f.read(18)[17]  # magic (9 bytes), version (<Q), dtype code (<B)
    got = np.fromfile(path + ".bin", dtype={4: np.int32, 8: np.uint16}[code]).astype(np.int64)
    eod = int(got[-1]) if got.size else 0
    want = [x for d in ids if len(d) for x in (np.append(d, eod),)]
    return np.array_equal(got, np.concatenate(want) if want else got[:0])


def head_corpus(corpus, mb_limit, out):
    """The first documents of corpus holding >= mb_limit MB of text, written to out."""
    mb = 0.0
    with open(corpus, encoding="utf-8") as f, open(out, "w", encoding="utf-8") as o:
        for line in f:
            o.write(line)
            mb += len(json.loads(line)["text"].encode("utf-8", "surrogatepass")) / 1e6
            if mb >= mb_limit:
                break
    return out


def hf_backend(path):
    from transformers import AutoTokenizer
    backend = AutoTokenizer.from_pretrained(path).backend_tokenizer
    return lambda t: backend.encode(t).ids


def spm_encode(model):
    import sentencepiece
    sp = sentencepiece.SentencePieceProcessor(model_file=model)
    return lambda t: sp.encode_as_ids(t)


def bpe_model(vocab):
    """A BPE .model (4000 pieces, byte_fallback) trained on botchan.txt like
    tests/interop/test_spm.py does, cached under ~/.cache/mgtools/bench/."""
    import sentencepiece

    cache = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                         "mgtools", "bench")
    prefix = os.path.join(cache, f"spm-bpe-4000-bf-{sentencepiece.__version__}")
    if not os.path.exists(prefix + ".model"):
        os.makedirs(cache, exist_ok=True)
        sentencepiece.SentencePieceTrainer.train(
            input=os.path.join(vocab, "sentencepiece", "botchan.txt"), model_prefix=prefix,
            model_type="bpe", vocab_size=4000, byte_fallback=True, minloglevel=2)
    return prefix + ".model"


def zh_models(corpus):
    """A Unigram and a BPE .model (8000 pieces, byte fallback) trained by sentencepiece on
    the texts of corpus (the Chinese corpus), cached under ~/.cache/mgtools/bench/."""
    import hashlib

    import sentencepiece
    with open(corpus, "rb") as f:
        tag = hashlib.sha256(f.read()).hexdigest()[:12]
    cache = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                         "mgtools", "bench")
    out = {}
    for kind in ("unigram", "bpe"):
        prefix = os.path.join(cache, f"spm-zh-{kind}-8000-bf-{tag}-{sentencepiece.__version__}")
        if not os.path.exists(prefix + ".model"):
            os.makedirs(cache, exist_ok=True)
            text = prefix + ".txt"
            with open(text, "w", encoding="utf-8") as f:
                for t in load_texts(corpus):
                    f.write(t + "\n")
            sentencepiece.SentencePieceTrainer.train(
                input=text, model_prefix=prefix, model_type=kind, vocab_size=8000,
                byte_fallback=True, character_coverage=0.9995, minloglevel=2)
            os.remove(text)
        out[kind] = prefix + ".model"
    return out


def wordpiece_vocab(vocab):
    """A lower-cased WordPiece vocab.txt (8000 entries) trained on botchan.txt by HF
    tokenizers' BertWordPieceTokenizer, cached under ~/.cache/mgtools/bench/."""
    import tokenizers

    cache = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                         "mgtools", "bench", f"wordpiece-8000-{tokenizers.__version__}")
    path = os.path.join(cache, "vocab.txt")
    if not os.path.exists(path):
        os.makedirs(cache, exist_ok=True)
        t = tokenizers.BertWordPieceTokenizer(lowercase=True)
        t.train([os.path.join(vocab, "sentencepiece", "botchan.txt")], vocab_size=8000,
                min_frequency=2, show_progress=False)
        t.save_model(cache)
    return path


def hf_wordpiece(path):
    """HF tokenizers' BertWordPieceTokenizer; [CLS] ... [SEP] around the ids, as
    megatron-core 0.16's BertWordPieceLowerCase tokenize() (and mg-preprocess) give them."""
    import tokenizers

    t = tokenizers.BertWordPieceTokenizer(path, lowercase=True)
    return lambda s: t.encode(s).ids


def unigram_json(model, workdir):
    """tokenizer.json of a sentencepiece Unigram .model, by transformers' SpmConverter."""
    from transformers.convert_slow_tokenizer import SpmConverter

    class Slow:
        vocab_file = model
        add_prefix_space = True

    d = os.path.join(workdir, "unigram-" + os.path.basename(model).replace(".model", ""))
    os.makedirs(d, exist_ok=True)
    SpmConverter(Slow()).converted().save(os.path.join(d, "tokenizer.json"))
    with open(os.path.join(d, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump({"eos_token": "</s>", "unk_token": "<unk>"}, f)  # eod for --append-eod
    return d


def spm_case(label, model):
    return (label, ["--tokenizer-type", "SentencePieceTokenizer", "--tokenizer-model", model],
            [("sentencepiece", lambda: spm_encode(model))])


def cases_zh(vocab, corpus):
    """The SentencePiece .model tokenizers on the Chinese corpus."""
    models = zh_models(corpus)
    return [spm_case("Unigram zh 8000 bf .model (SentencePiece)", models["unigram"]),
            spm_case("BPE zh 8000 bf .model (SentencePiece)", models["bpe"]),
            spm_case("Unigram test_ja_model.model (SentencePiece)",
                     os.path.join(vocab, "sentencepiece", "test_ja_model.model"))]


def cases(vocab, workdir):
    """(name, mg-preprocess flags, [(peer name, encode factory)])"""
    hf = lambda name: os.path.join(vocab, "hf", name)  # noqa: E731
    spm = os.path.join(vocab, "sentencepiece", "test_ja_model.model")
    out = []
    for name, label in (("llama2", "Llama-2 (tokenizer.json, SPM-BPE)"),
                        ("llama3", "Llama-3 (tokenizer.json, byte BPE)"),
                        ("qwen3", "Qwen3 (tokenizer.json, byte BPE)")):
        out.append((label, ["--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model",
                            hf(name)], [("HF tokenizers", lambda n=name: hf_backend(hf(n)))]))
    out.append(spm_case("Unigram test_ja_model.model (SentencePiece)", spm))
    out.append(spm_case("BPE botchan 4000 bf .model (SentencePiece)", bpe_model(vocab)))
    wp = wordpiece_vocab(vocab)
    out.append(("WordPiece vocab.txt (BertWordPieceLowerCase)",
                ["--tokenizer-type", "BertWordPieceLowerCase", "--vocab-file", wp],
                [("HF tokenizers", lambda: hf_wordpiece(wp))]))
    uj = unigram_json(spm, workdir)
    out.append(("Unigram test_ja_model (tokenizer.json)",
                ["--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model", uj],
                [("HF tokenizers", lambda: hf_backend(uj))]))
    return out


def bench_case(a, work, corpus, texts, mb, case):
    """Times and checks one tokenizer; returns 1 if an id differs, else 0."""
    name, flags, peers = case
    mg = os.path.join(a.bin, "mg-preprocess")
    prefix = os.path.join(work, "out")
    encoders = [(peer, factory()) for peer, factory in peers]
    best = {}
    ids = {}

    def keep(key, secs, result=None):
        if key not in best or secs[0] < best[key][0]:
            best[key] = secs
        if result is not None:
            ids.setdefault(key, result)
    for _ in range(a.rounds):
        keep("mg", cpu_mg(mg, corpus, flags, prefix))
        keep("load", cpu_mg(mg, os.path.join(work, "one.jsonl"), flags,
                            os.path.join(work, "one")))
        e, e_ids = cpu_encoder(a.encode_bench, corpus, flags, os.path.join(work, "ids.u32"))
        keep("encoder", (e,), e_ids)
        for peer, encode in encoders:
            p, pw, p_ids = cpu_peer(encode, texts)
            keep(peer, (p, pw), p_ids)
    s, w = best["mg"]
    load = best["load"][0]
    e = best["encoder"][0]
    print(f"{name:46s} {'mg-preprocess -w 1':19s} {s:7.3f} {w:7.2f} {mb / s:6.2f} "
          f"{'':7s} {mb / (s - load):7.2f}  (load {load:.3f} s)", flush=True)
    print(f"{'':46s} {'mg encoder only':19s} {e:7.3f} {'':7s} {mb / e:6.2f}", flush=True)
    failed = 0
    for peer, _ in encoders:
        p, pw = best[peer]
        print(f"{'':46s} {peer:19s} {p:7.3f} {pw:7.2f} {mb / p:6.2f} {p / s:6.1f}x "
              f"{p / (s - load):6.1f}x  encoder only {p / e:.1f}x", flush=True)
        bad = first_difference(ids["encoder"], ids[peer])
        if bad is not None:
            print(f"error: {peer} and mg_encode differ on document {bad}", flush=True)
            failed = 1
    if not bin_matches(prefix, ids["encoder"]):
        print("error: mg-preprocess's .bin differs from mg_encode's ids + eod", flush=True)
        failed = 1
    if not failed:
        print(f"{'':46s} ids: mg_encode == {', '.join(p for p, _ in peers)} on all "
              f"{len(texts)} documents; .bin == mg_encode + eod", flush=True)
    return failed


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--vocab", required=True)
    ap.add_argument("--mb", type=float, default=20.0, help="MB of text taken from the corpus")
    ap.add_argument("--only", help="run only the tokenizers whose name contains this")
    ap.add_argument("--rounds", type=int, default=1, help="runs per contender, fastest kept")
    ap.add_argument("--zh", action="store_true", help="the .model tokenizers on Chinese text")
    ap.add_argument("--encode-bench", required=True, help="tests/tools/encode_bench")
    a = ap.parse_args()
    failed = 0
    with tempfile.TemporaryDirectory() as work:
        corpus = head_corpus(a.corpus, a.mb, os.path.join(work, "corpus.jsonl"))
        texts = load_texts(corpus)
        mb = sum(len(t.encode("utf-8", "surrogatepass")) for t in texts) / 1e6
        print(f"corpus: first {len(texts)} documents of {a.corpus}, {mb:.1f} MB of text; "
              f"{os.cpu_count()} cores; one core per contender; fastest of {a.rounds} round(s)")
        with open(os.path.join(work, "one.jsonl"), "w", encoding="utf-8") as f:
            f.write('{"text": "x"}\n')
        print("CPU seconds; mg-preprocess: the whole process, 'load' = the same on a one-line "
              "corpus (tokenizer loading), 'steady' = MB / (cpu - load)")
        print(f"{'tokenizer':46s} {'contender':19s} {'cpu s':>7s} {'wall s':>7s} {'MB/s':>6s} "
              f"{'mg/peer':>7s} {'steady':>7s}")
        chosen = cases_zh(a.vocab, a.corpus) if a.zh else cases(a.vocab, work)
        for case in chosen:
            if not a.only or a.only in case[0]:
                failed |= bench_case(a, work, corpus, texts, mb, case)
    return failed


if __name__ == "__main__":
    sys.exit(main())
