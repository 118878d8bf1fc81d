#!/usr/bin/env python3
"""Builds a Chinese JSONL benchmark corpus from Debian's fortunes-zh package.

Source: /usr/share/games/fortunes/{chinese,tang300,song100} of the Debian package
`fortunes-zh` (GPL-3.0+, see /usr/share/doc/fortunes-zh/copyright; tang300 and song100 are
classical Tang and Song poems, themselves in the public domain). Installed with
`apt-get install fortunes-zh`; nothing of it is committed to this repository.

The fortunes are read in that order, the terminal colour escapes (ESC [ ... m) are removed,
and consecutive fortunes are joined (with a blank line) into documents of at least
--doc-bytes bytes of UTF-8, one JSON line {"text": ...} each. No text is repeated, so a
tokenizer's caches see it as a cold corpus would be seen (~2.2 MB of text). Deterministic;
standard library only.

    scripts/make-zh-corpus.py --out zh.jsonl [--doc-bytes 4096] [--root DIR]
"""
import argparse
import json
import os
import re
import sys

FILES = ("chinese", "tang300", "song100")
ESCAPE = re.compile(r"\x1b\[[0-9;]*m")


def fortunes(root):
    """The fortunes of FILES under root, in order, without colour escapes or outer blanks."""
    for name in FILES:
        path = os.path.join(root, name)
        with open(path, encoding="utf-8") as f:
            text = ESCAPE.sub("", f.read())
        for item in re.split(r"(?m)^%\n", text):
            item = item.strip("\n")
            if item.strip():
                yield item


def documents(items, doc_bytes):
    """items joined with a blank line into documents of at least doc_bytes bytes."""
    doc, size = [], 0
    for item in items:
        doc.append(item)
        size += len(item.encode("utf-8")) + 2
        if size >= doc_bytes:
            yield "\n\n".join(doc)
            doc, size = [], 0
    if doc:
        yield "\n\n".join(doc)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--doc-bytes", type=int, default=4096)
    ap.add_argument("--root", default="/usr/share/games/fortunes")
    a = ap.parse_args()
    missing = [n for n in FILES if not os.path.exists(os.path.join(a.root, n))]
    if missing:
        print(f"make-zh-corpus: error: {', '.join(missing)} not in {a.root} "
              "(apt-get install fortunes-zh)", file=sys.stderr)
        return 1
    docs = written = 0
    tmp = a.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as out:
        for doc in documents(fortunes(a.root), a.doc_bytes):
            out.write(json.dumps({"text": doc}, ensure_ascii=False) + "\n")
            written += len(doc.encode("utf-8"))
            docs += 1
    os.replace(tmp, a.out)
    print(f"{docs} documents, {written / 1e6:.2f} MB of text -> {a.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
