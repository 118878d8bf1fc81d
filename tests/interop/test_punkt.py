"""Punkt sentence splitting (libcommon/text/punkt*.c, mg-preprocess --split-sentences) against NLTK.

Peer: nltk (3.10.4) PunktSentenceTokenizer / PunktTokenizer with parameters saved in NLTK's
punkt_tab format by nltk.tokenize.punkt.save_punkt_params, and Megatron's
CustomLanguageVars (tools/preprocess_data.py, --keep-newlines). There is no network to
nltk_data, so the models are
  trained   PunktTrainer on botchan.txt + fortunes (what a real English model looks like)
  handmade  explicit abbreviations, collocations, sentence starters and orthographic
            contexts, so that every branch of the second pass is taken.
Our side: build/tests/tools/punkt_split (spans of texts) and full mg-preprocess runs, compared
with megatron-core's IndexedDatasetBuilder fed with Megatron's own loop (Encoder.split:
pieces of 1,000,000 code points, splitter.tokenize; Encoder.encode: one sequence per
sentence with tokens, eod after the last one).
"""
import json
import os
import pathlib
import random
import shutil
import struct
import subprocess

import nltk
import pytest
from nltk.tokenize.punkt import (PunktLanguageVars, PunktParameters, PunktSentenceTokenizer,
                                 PunktTokenizer, PunktTrainer, save_punkt_params)

from conftest import VOCAB_DIR, assert_same_dataset, megatron_build, run_mg, tools_dir_path

ROOT = pathlib.Path(__file__).resolve().parents[2]
VOCAB = VOCAB_DIR
FORTUNES = pathlib.Path("/usr/share/games/fortunes")
MEGATRON_CHUNK = 1000000


class CustomLanguageVars(PunktLanguageVars):
    """Megatron tools/preprocess_data.py's class for --keep-newlines (same regex)."""

    _period_context_fmt = r"""
        \S*                          # some word material
        %(SentEndChars)s             # a potential sentence ending
        \s*                       #  <-- THIS is what I changed
        (?=(?P<after_tok>
            %(NonWord)s              # either other punctuation
            |
            (?P<next_tok>\S+)     #  <-- Normally you would have \s+ here
        ))"""


def test_nltk_version():
    assert nltk.__version__ == "3.10.4", "the port follows NLTK 3.10.4's punkt.py"


# ---- models -------------------------------------------------------------------------------


def training_text():
    parts = [(VOCAB / "sentencepiece" / "botchan.txt").read_text(encoding="utf-8")]
    for name in ["fortunes", "literature", "people", "wisdom", "science", "politics"]:
        # Debian fortunes-min / fortunes (scripts/setup.sh): a missing file fails the test
        parts.append((FORTUNES / name).read_text(encoding="utf-8"))
    return "\n\n".join(parts)


def handmade_params():
    p = PunktParameters()
    p.abbrev_types = {"mr", "dr", "u.s", "e.g", "etc", "st", "no", "vol", "i.e", "a.m", "jan",
                      "inc", "σσ"}
    p.collocations = {("s.", "bach"), ("##number##", "the"), ("j", "bach"), ("no", "one")}
    p.sent_starters = {"however", "but", "finally", "the", "then"}
    for typ, flags in {"the": 34, "he": 38, "bach": 2, "finally": 2, "however": 16, "but": 20,
                       "said": 32, "smith": 4, "then": 18, "it": 50, "we": 64}.items():
        p.ortho_context[typ] = flags
    return p


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """{'trained': dir, 'handmade': dir}: DIR/english of a punkt_tab root registered in
    nltk.data.path (save_punkt_params writes only inside NLTK's data sandbox)."""
    root = tmp_path_factory.mktemp("nltk_data")
    os.chmod(root, 0o700)
    nltk.data.path.insert(0, str(root))
    trainer = PunktTrainer()
    trainer.INCLUDE_ALL_COLLOCS = True
    trainer.train(training_text(), finalize=True)
    out = {}
    for name, params in [("trained", trainer.get_params()), ("handmade", handmade_params())]:
        lang = f"english_{name}"
        d = root / "tokenizers" / "punkt_tab" / lang
        d.parent.mkdir(parents=True, exist_ok=True)
        save_punkt_params(params, dir=str(d))
        # the peer reads the files back exactly as NLTK loads an installed model
        out[name] = {"dir": d, "lang": lang, "params": PunktTokenizer(lang)._params,
                     "root": root}
    assert len(out["trained"]["params"].abbrev_types) > 50
    assert len(out["trained"]["params"].collocations) > 50
    return out


def peer(model, keep_newlines):
    lang_vars = CustomLanguageVars() if keep_newlines else None
    return PunktSentenceTokenizer(model["params"], lang_vars=lang_vars)


def ours(model, texts, keep_newlines, chunk=0):
    """Sentences of every text from build/tests/tools/punkt_split."""
    data = b"".join(struct.pack("<Q", len(t.encode())) + t.encode() for t in texts)
    tool = tools_dir_path() / "punkt_split"
    if not os.access(tool, os.X_OK):
        pytest.fail(f"{tool} is missing: build it with make build/tests/tools/punkt_split")
    args = [str(tool), str(model["dir"])]
    args += ["--keep-newlines"] if keep_newlines else []
    args += ["--chunk", str(chunk)] if chunk else []
    out = subprocess.run(args, input=data, capture_output=True, check=True).stdout.decode()
    res, cur, i = [], [], 0
    for line in out.splitlines():
        if line == "-":
            res.append(cur)
            cur, i = [], i + 1
            continue
        a, b = map(int, line.split())
        cur.append(texts[i].encode()[a:b].decode())
    assert len(res) == len(texts)
    return res


def assert_same_splits(model, texts, keep_newlines, chunk=0):
    tok = peer(model, keep_newlines)
    if chunk:
        exp = [[s for i in range(0, len(t), chunk) for s in tok.tokenize(t[i:i + chunk])]
               for t in texts]
    else:
        exp = [tok.tokenize(t) for t in texts]
    got = ours(model, texts, keep_newlines, chunk)
    bad = [i for i in range(len(texts)) if exp[i] != got[i]]
    assert not bad, (f"{len(bad)} of {len(texts)} texts differ; first: {texts[bad[0]]!r}\n"
                     f"nltk: {exp[bad[0]]}\nours: {got[bad[0]]}")
    return sum(map(len, exp))


# ---- texts --------------------------------------------------------------------------------

SPECIAL = [
    "Mr. Smith went to Washington. He arrived at 5 p.m. on Jan. 3. Then he left.",
    "Dr. Watson and Mrs. Hudson live in the U.S. They like it.",
    "The U.S. Army is large. e.g. this one. i.e. that one. Etc. etc. and so on.",
    "J. S. Bach wrote music. S. Bach was great. A. B. Smith said no.",
    "Wait... what? Really?! Yes!!! No... I don't know. . . Maybe. ..and more.. end",
    "It costs 3.50 dollars. He was 1st. in line. The 2. the third. 1,000.00 is a lot. -5. ok",
    "\"Hello.\" She said. (This is a test.) [Another one.] {Braces.} 'Single.' Done.",
    "\u201cCurly quotes.\u201d Next one. \u2018Single curly.\u2019 And "
    "\u00abguillemets.\u00bb End.",
    "He said \"stop.\"\nNew line here. Another?\n\nParagraph two.  Spaces   here.\n\n",
    "Line one.\nLine two.\r\nLine three.\rLine four.\n\n\n   \n",
    "Trailing spaces.   \t  ",
    "   Leading spaces. And more.",
    "No sentence end here",
    "",
    "   \n\n  ",
    ".",
    "...",
    "?!",
    "a.b.c. D.e.f. ghi.",
    "End with quote.\" Next.",
    "End with paren.) Next. (Open. Close.) More.",
    "Dash.-- next. Double--dash. Then.",
    "Ellipsis\u2026 Unicode ellipsis. Next\u2026 one.",
    "\u0130stanbul. \u0130. Capital dotted. \u03a3\u03a3. \u03c3\u03c3. \u0391\u03a3. Greek.",
    "\u24b6. Circled. \u01c5. Titlecase. \u2160. Roman.",
    "Non-breaking.\u00a0Space. Ideographic.\u3000Space. Line\u2028sep. Para\u2029sep.",
    "Info sep.\x1c next. Unit sep.\x1f next.\x1c",
    "Tab\tseparated.\tWords. Vertical\x0btab. Form\x0cfeed.",
    "mid-word abbreviations: inter-st. and co-dr. Then.",
    "Numbers: 1. 2. 3. The end. No. one. No. 5 is here.",
    "He said, \"Go.\" Then: 'Stop.' (Really.) [Yes.] Fine.",
    "Question? \"Answer!\" (Maybe?) Ok.",
    "A.\nB.\nC.\n",
    "x. y. z. X. Y. Z.",
    "we. We. it. It. the. The. then. Then.",
    "\u4e2d\u6587\u3002\u53e5\u5b50\u3002 English. \u0420\u0443\u0441\u0441\u043a\u0438\u0439. "
    "\u0422\u0435\u043a\u0441\u0442.",
]

WORDS = ["Mr.", "Dr.", "U.S.", "e.g.", "etc.", "J.", "S.", "Bach", "the", "The", "He", "he",
         "said", "1.", "2nd.", "3.14", "...", "..", ". . .", "--", "-", "(", ")", "[", "]", '"',
         "'", "\u201c", "\u201d", "\u2018", "\u2019", "\u00ab", "\u00bb", "!", "?", "?!", ".",
         ",", ";", ":", "\n", "\n\n", " ", "\t", "\r\n", "\u0391\u03a3.", "\u0130.", "\u24b6.",
         "\u01c5", "1,000.", "-5.", "a.m.", "I.", "However", "But", "noah", "Finally", "\u2028",
         "\u3000", "\x1c", "\u00a0", "No.", "vol.", "St.", "i.e.", "\u2026", "'s", "A", "a",
         "B.", "c)", "(d.", "e.)", "Wow!!!", 'Hm?!"', 'end."', "end.)", "end.'", "end.\u00bb",
         "Then", "then", "It", "we", "Smith.", "no", "one"]


def random_texts(seed, n):
    rng = random.Random(seed)
    texts = []
    for _ in range(n):
        parts = [rng.choice(WORDS) + rng.choice(["", " ", " ", "\n", "  "])
                 for _ in range(rng.randint(1, 40))]
        texts.append("".join(parts))
    return texts


def corpus_texts():
    texts = [(VOCAB / "sentencepiece" / "botchan.txt").read_text(encoding="utf-8")]
    for f in sorted(FORTUNES.rglob("*")):
        if f.is_file() and not f.name.endswith(".dat"):
            try:
                texts.append(f.read_text(encoding="utf-8"))
            except UnicodeDecodeError:
                pass
    return texts


# ---- splitter against NLTK ----------------------------------------------------------------

KEEP = pytest.mark.parametrize("keep_newlines", [False, True], ids=["stock", "keep-newlines"])
MODEL = pytest.mark.parametrize("model_name", ["trained", "handmade"])


@KEEP
@MODEL
def test_corpus_files(models, model_name, keep_newlines):
    texts = corpus_texts()
    assert len(texts) > 20
    assert assert_same_splits(models[model_name], texts, keep_newlines) > 10000


@KEEP
@MODEL
def test_special_cases(models, model_name, keep_newlines):
    assert_same_splits(models[model_name], SPECIAL, keep_newlines)
    # each special text also glued to the others, to shift every context
    glued = [a + b for a in SPECIAL for b in SPECIAL[:12]]
    assert_same_splits(models[model_name], glued, keep_newlines)


@KEEP
@MODEL
@pytest.mark.parametrize("seed", [1, 2])
def test_random_word_soup(models, model_name, keep_newlines, seed):
    assert_same_splits(models[model_name], random_texts(seed, 2000), keep_newlines)


@KEEP
@pytest.mark.parametrize("chunk", [7, 100, 1000])
def test_chunked_like_megatron(models, keep_newlines, chunk):
    """Megatron tokenizes pieces of 1,000,000 code points; smaller pieces show the cut."""
    texts = random_texts(9, 200) + SPECIAL + corpus_texts()[1:4]
    assert_same_splits(models["handmade"], texts, keep_newlines, chunk=chunk)


# ---- mg-preprocess --split-sentences against Megatron's loop ---------------------------------


def gpt2_tokenizer(tmp_dir):
    from transformers import GPT2TokenizerFast
    shutil.copy(VOCAB / "gpt2" / "gpt2-vocab.json", tmp_dir / "vocab.json")
    shutil.copy(VOCAB / "gpt2" / "gpt2-merges.txt", tmp_dir / "merges.txt")
    t = GPT2TokenizerFast.from_pretrained(str(tmp_dir))
    t.model_max_length = 1 << 40
    return t


GPT2_ARGS = ["--tokenizer-type", "GPT2BPETokenizer",
             "--vocab-file", str(VOCAB / "gpt2" / "gpt2-vocab.json"),
             "--merge-file", str(VOCAB / "gpt2" / "gpt2-merges.txt")]


def megatron_sentence_docs(records, key, splitter, encode, eod, append_eod):
    """Encoder.split followed by Encoder.encode (tools/preprocess_data.py), through JSON."""
    docs = []
    for rec in records:
        text = rec[key]
        pieces = [splitter.tokenize(text[i:i + MEGATRON_CHUNK])
                  for i in range(0, len(text), MEGATRON_CHUNK)]
        line = json.dumps({key: [s for p in pieces for s in p]})
        sentences = json.loads(line)[key]
        doc = []
        for s in sentences:
            ids = list(encode(s))
            if ids:
                doc.append(ids)
        if doc and append_eod:
            doc[-1].append(eod)
        docs.append(doc)
    return docs


def preprocess_records():
    records = [{"text": t} for t in SPECIAL + random_texts(5, 300)]
    for t in corpus_texts()[:6]:
        records += [{"text": p} for p in t.split("\n%\n")[:150]]
    records.append({"text": corpus_texts()[0]})  # botchan as one document
    return records


@pytest.mark.parametrize("append_eod", [False, True], ids=["no-eod", "eod"])
@KEEP
def test_preprocess_matches_megatron(tmp_path, models, keep_newlines, append_eod):
    model = models["trained"]
    records = preprocess_records()
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    flags = ["--split-sentences", "--punkt-dir", str(model["dir"].parent),
             "--lang", model["lang"], "--quiet"] + GPT2_ARGS
    flags += ["--keep-newlines"] if keep_newlines else []
    flags += ["--append-eod"] if append_eod else []
    for workers in ["1", "3"]:
        run_mg(["mg-preprocess", "--input", str(src), "--output-prefix",
                str(tmp_path / f"w{workers}"), "--workers", workers] + flags)
    assert (tmp_path / "w1_text_sentence.idx").exists()
    assert not (tmp_path / "w1_text_document.idx").exists()
    tok = gpt2_tokenizer(tmp_path)
    docs = megatron_sentence_docs(records, "text", peer(model, keep_newlines),
                                  lambda s: tok(s)["input_ids"], tok.eos_token_id, append_eod)
    assert sum(len(d) for d in docs) > 2 * len(records)
    megatron_build(tmp_path / "peer", docs, "uint16")
    assert_same_dataset(tmp_path / "w1_text_sentence", tmp_path / "peer")
    assert_same_dataset(tmp_path / "w3_text_sentence", tmp_path / "peer")
    assert sorted(p.name for p in tmp_path.glob("w*")) == [
        "w1_text_sentence.bin", "w1_text_sentence.idx", "w3_text_sentence.bin",
        "w3_text_sentence.idx"]


def test_preprocess_multi_key_and_nltk_data(tmp_path, models):
    """Two keys; the model found through $NLTK_DATA like nltk.data.find."""
    model = models["handmade"]
    records = [{"a": t, "b": u} for t, u in zip(SPECIAL, reversed(SPECIAL))]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    env = dict(os.environ, NLTK_DATA=f"/nonexistent:{model['root']}")
    run_mg(["mg-preprocess", "--input", str(src), "--output-prefix", str(tmp_path / "out"),
            "--json-keys", "a", "b", "--split-sentences", "--lang", model["lang"],
            "--append-eod", "--quiet"] + GPT2_ARGS, env=env)
    tok = gpt2_tokenizer(tmp_path)
    for key in ["a", "b"]:
        docs = megatron_sentence_docs(records, key, peer(model, False),
                                      lambda s: tok(s)["input_ids"], tok.eos_token_id, True)
        megatron_build(tmp_path / f"peer_{key}", docs, "uint16")
        assert_same_dataset(tmp_path / f"out_{key}_sentence", tmp_path / f"peer_{key}")


def test_missing_model_is_an_error(tmp_path, models):
    src = tmp_path / "in.jsonl"
    src.write_text('{"text": "A. B."}\n', encoding="utf-8")
    base = ["mg-preprocess", "--input", str(src), "--output-prefix", str(tmp_path / "out"),
            "--split-sentences", "--quiet"] + GPT2_ARGS
    env = dict(os.environ, NLTK_DATA=str(tmp_path / "none"), HOME=str(tmp_path))
    r = run_mg(base + ["--lang", "klingon"], check=False, env=env)
    assert r.returncode == 1 and "Punkt model 'klingon' not found" in r.stderr
    broken = tmp_path / "broken" / "english"
    shutil.copytree(models["handmade"]["dir"], broken)
    (broken / "ortho_context.tab").unlink()
    r = run_mg(base + ["--punkt-dir", str(broken.parent)], check=False)
    assert r.returncode == 1 and "ortho_context.tab" in r.stderr
    (broken / "ortho_context.tab").write_text("the\tx\n", encoding="utf-8")
    r = run_mg(base + ["--punkt-dir", str(broken.parent)], check=False)
    assert r.returncode == 1 and "ortho_context.tab:1: invalid integer" in r.stderr
    r = run_mg(base + ["--punkt-dir", str(broken.parent), "--lang", "../english"], check=False)
    assert r.returncode == 2 and "invalid Punkt language name" in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken", "in.jsonl"]
