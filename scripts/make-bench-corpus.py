#!/usr/bin/env python3
"""Builds a real-text JSONL corpus for benchmarks from text already installed on the machine.

Walks the given roots in sorted order and writes one JSON line {"text": ...} per readable
UTF-8 text file (documentation, source code, fortunes, licences ...), until the output reaches
--size megabytes. Deterministic for a given machine. Standard library only.

    scripts/make-bench-corpus.py --size 120 --out corpus.jsonl [ROOT ...]
"""
import argparse
import json
import os
import sys

DEFAULT_ROOTS = ["/usr/share/games/fortunes", "/usr/share/doc", "/usr/share/common-licenses",
                 "/usr/lib/python3", "/usr/share/perl", "/usr/include", "/usr/share/vim",
                 sys.prefix]
TEXT_EXT = {".txt", ".py", ".h", ".c", ".md", ".rst", ".pl", ".pm", ".vim", ".html", ".u8", ""}


def files_under(root):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            if os.path.splitext(name)[1] in TEXT_EXT and os.path.isfile(path) and not os.path.islink(path):
                yield path


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=float, default=120, help="target size in MB (10^6 bytes)")
    ap.add_argument("--out", required=True)
    ap.add_argument("roots", nargs="*", default=DEFAULT_ROOTS)
    args = ap.parse_args()
    target = int(args.size * 1e6)
    written = docs = 0
    seen = set()
    with open(args.out, "w", encoding="utf-8") as out:
        for root in args.roots:
            for path in files_under(root):
                real = os.path.realpath(path)
                if real in seen:
                    continue
                seen.add(real)
                try:
                    with open(path, "rb") as f:
                        data = f.read(1 << 20)
                    text = data.decode("utf-8")
                except (OSError, UnicodeDecodeError):
                    continue
                if not text.strip() or "\0" in text:
                    continue
                line = json.dumps({"text": text}, ensure_ascii=False) + "\n"
                out.write(line)
                written += len(line.encode("utf-8"))
                docs += 1
                if written >= target:
                    print(f"{docs} documents, {written / 1e6:.1f} MB -> {args.out}", file=sys.stderr)
                    return 0
    print(f"only {written / 1e6:.1f} MB of text found ({docs} documents) -> {args.out}",
          file=sys.stderr)
    return 0 if written >= target else 1


if __name__ == "__main__":
    sys.exit(main())
