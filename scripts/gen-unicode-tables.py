#!/usr/bin/env python3
"""gen-unicode-tables.py — generates libcommon/base/unicode_tables.c (the pre-tokenizer's code point
class table) from Debian's unicode-data files (/usr/share/unicode, Unicode 15.0.0).

    scripts/gen-unicode-tables.py [--ucd DIR] [-o libcommon/base/unicode_tables.c]
    scripts/gen-unicode-tables.py --check          # regenerate and compare byte for byte
    scripts/gen-unicode-tables.py --probe-delta    # re-derive POST_15_0 from the peers

Each code point gets one property byte (see mg/unicode.h):
    bits 0-3  general category: 0 other (C*), 1 Lu, 2 Ll, 3 Lt, 4 Lm, 5 Lo, 6 Mn, 7 Mc, 8 Me,
              9 Nd, 10 Nl, 11 No, 12 P*, 13 S*, 14 Z*
    bit 4     White_Space (PropList.txt, 25 code points)
    bit 5     Script=Han (Scripts.txt)
    bits 6-7  age of the class data: 0 = as in Unicode 14.0, 1 = assigned in 15.0
              (DerivedAge.txt), 2 = assigned or changed after 15.0 (POST_15_0 below)

The peers (HF tokenizers 0.23's bundled Oniguruma and tiktoken 0.14's Rust regex) implement
Unicode 16.0, Debian's data is 15.0 and Debian's libonig 6.9.8 is 14.0. POST_15_0 lists every
code point whose class differs between Debian's 15.0 data and both peers; it was produced by
`--probe-delta` (which runs \\p{..} over all code points in both peers, needs the Python test
environment, and refuses to print anything if the two peers disagree) and is committed here so
that generation needs only Debian's files.

The table has two stages: stage1[cp >> 8] selects a 256-entry block of stage2; block 0 holds
U+0000..U+00FF so that stage2[cp] is the property byte of every cp < 256.
"""
import argparse
import os
import sys

CATS = ["C", "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "P", "S", "Z"]
WS_BIT, HAN_BIT, AGE_SHIFT = 0x10, 0x20, 6
HAN = True

# (first, last, category, [HAN]) for Unicode 15.1 + 16.0 (see --probe-delta).
POST_15_0 = [
    (0x0897, 0x0897, "Mn"), (0x1B4E, 0x1B4F, "P"), (0x1B7F, 0x1B7F, "P"),
    (0x1C89, 0x1C89, "Lu"), (0x1C8A, 0x1C8A, "Ll"), (0x2427, 0x2429, "S"),
    (0x2FFC, 0x2FFF, "S"), (0x31E4, 0x31E5, "S"), (0x31EF, 0x31EF, "S"),
    (0xA7CB, 0xA7CC, "Lu"), (0xA7CD, 0xA7CD, "Ll"), (0xA7DA, 0xA7DA, "Lu"),
    (0xA7DB, 0xA7DB, "Ll"), (0xA7DC, 0xA7DC, "Lu"), (0x105C0, 0x105F3, "Lo"),
    (0x10D40, 0x10D49, "Nd"), (0x10D4A, 0x10D4D, "Lo"), (0x10D4E, 0x10D4E, "Lm"),
    (0x10D4F, 0x10D4F, "Lo"), (0x10D50, 0x10D65, "Lu"), (0x10D69, 0x10D6D, "Mn"),
    (0x10D6E, 0x10D6E, "P"), (0x10D6F, 0x10D6F, "Lm"), (0x10D70, 0x10D85, "Ll"),
    (0x10D8E, 0x10D8F, "S"), (0x10EC2, 0x10EC4, "Lo"), (0x10EFC, 0x10EFC, "Mn"),
    (0x11380, 0x11389, "Lo"), (0x1138B, 0x1138B, "Lo"), (0x1138E, 0x1138E, "Lo"),
    (0x11390, 0x113B5, "Lo"), (0x113B7, 0x113B7, "Lo"), (0x113B8, 0x113BA, "Mc"),
    (0x113BB, 0x113C0, "Mn"), (0x113C2, 0x113C2, "Mc"), (0x113C5, 0x113C5, "Mc"),
    (0x113C7, 0x113CA, "Mc"), (0x113CC, 0x113CD, "Mc"), (0x113CE, 0x113CE, "Mn"),
    (0x113CF, 0x113CF, "Mc"), (0x113D0, 0x113D0, "Mn"), (0x113D1, 0x113D1, "Lo"),
    (0x113D2, 0x113D2, "Mn"), (0x113D3, 0x113D3, "Lo"), (0x113D4, 0x113D5, "P"),
    (0x113D7, 0x113D8, "P"), (0x113E1, 0x113E2, "Mn"), (0x116D0, 0x116E3, "Nd"),
    (0x1171E, 0x1171E, "Mc"), (0x11BC0, 0x11BE0, "Lo"), (0x11BE1, 0x11BE1, "P"),
    (0x11BF0, 0x11BF9, "Nd"), (0x11F5A, 0x11F5A, "Mn"), (0x13460, 0x143FA, "Lo"),
    (0x16100, 0x1611D, "Lo"), (0x1611E, 0x16129, "Mn"), (0x1612A, 0x1612C, "Mc"),
    (0x1612D, 0x1612F, "Mn"), (0x16130, 0x16139, "Nd"), (0x16D40, 0x16D42, "Lm"),
    (0x16D43, 0x16D6A, "Lo"), (0x16D6B, 0x16D6C, "Lm"), (0x16D6D, 0x16D6F, "P"),
    (0x16D70, 0x16D79, "Nd"), (0x18CFF, 0x18CFF, "Lo"), (0x1CC00, 0x1CCEF, "S"),
    (0x1CCF0, 0x1CCF9, "Nd"), (0x1CD00, 0x1CEB3, "S"), (0x1E5D0, 0x1E5ED, "Lo"),
    (0x1E5EE, 0x1E5EF, "Mn"), (0x1E5F0, 0x1E5F0, "Lo"), (0x1E5F1, 0x1E5FA, "Nd"),
    (0x1E5FF, 0x1E5FF, "P"), (0x1F8B2, 0x1F8BB, "S"), (0x1F8C0, 0x1F8C1, "S"),
    (0x1FA89, 0x1FA89, "S"), (0x1FA8F, 0x1FA8F, "S"), (0x1FABE, 0x1FABE, "S"),
    (0x1FAC6, 0x1FAC6, "S"), (0x1FADC, 0x1FADC, "S"), (0x1FADF, 0x1FADF, "S"),
    (0x1FAE9, 0x1FAE9, "S"), (0x1FBCB, 0x1FBEF, "S"), (0x2EBF0, 0x2EE5D, "Lo", HAN),
]


def read_ranges(path):
    """Yields (first, last, fields) for each data line of a UCD 'a..b ; x ; y' file."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            fields = [x.strip() for x in line.split(";")]
            a, _, b = fields[0].partition("..")
            yield int(a, 16), int(b or a, 16), fields[1:]


def major(gc):
    if gc in CATS:
        return gc
    return gc[0] if gc[0] in "PSZ" else "C"


def base_table(ucd):
    """Category index per code point from Debian's 15.0 files, plus WS/Han/age bits."""
    cat = [0] * 0x110000
    for a, b, f in read_ranges(os.path.join(ucd, "extracted", "DerivedGeneralCategory.txt")):
        cat[a:b + 1] = [CATS.index(major(f[0]))] * (b - a + 1)
    for a, b, f in read_ranges(os.path.join(ucd, "PropList.txt")):
        if f[0] == "White_Space":
            for c in range(a, b + 1):
                cat[c] |= WS_BIT
    for a, b, f in read_ranges(os.path.join(ucd, "Scripts.txt")):
        if f[0] == "Han":
            for c in range(a, b + 1):
                cat[c] |= HAN_BIT
    for a, b, f in read_ranges(os.path.join(ucd, "DerivedAge.txt")):
        if f[0] == "15.0":
            for c in range(a, b + 1):
                cat[c] |= 1 << AGE_SHIFT
    return cat


def apply_delta(tab):
    for entry in POST_15_0:
        a, b, gc = entry[:3]
        han = HAN_BIT if len(entry) > 3 else 0
        for c in range(a, b + 1):
            tab[c] = (tab[c] & WS_BIT) | CATS.index(gc) | han | (2 << AGE_SHIFT)


def fold_to_ascii(ucd):
    """Non-ASCII code points whose simple case folding is an ASCII letter (e.g. U+017F -> s)."""
    out = []
    for a, _, f in read_ranges(os.path.join(ucd, "CaseFolding.txt")):
        status, mapping = f[0], f[1].split()
        if status in ("C", "S") and a >= 0x80 and len(mapping) == 1:
            target = int(mapping[0], 16)
            if 0x61 <= target <= 0x7A:
                out.append((a, target))
    return sorted(out)


def two_stage(tab):
    blocks, index, stage1 = [], {}, []
    for hi in range(0x1100):
        blk = tuple(tab[hi << 8:(hi + 1) << 8])
        if blk not in index:
            index[blk] = len(blocks)
            blocks.append(blk)
        stage1.append(index[blk])
    return stage1, blocks


def hex_rows(values, width, per_row):
    fmt = "0x%0" + str(width) + "x"
    rows = []
    for i in range(0, len(values), per_row):
        rows.append("    " + ", ".join(fmt % v for v in values[i:i + per_row]) + ",")
    return "\n".join(rows)


def render(ucd):
    tab = base_table(ucd)
    apply_delta(tab)
    stage1, blocks = two_stage(tab)
    flat = [v for blk in blocks for v in blk]
    folds = fold_to_ascii(ucd)
    parts = [
        "/* unicode_tables.c — GENERATED by scripts/gen-unicode-tables.py; do not edit.",
        " *",
        " * Code point property bytes (layout in mg/unicode.h) from Debian unicode-data 15.0.0",
        " * (DerivedGeneralCategory, PropList White_Space, Scripts Han, DerivedAge, CaseFolding)",
        " * plus the Unicode 15.1/16.0 changes the peers implement (%d ranges)." % len(POST_15_0),
        " */",
        '#include "mg/unicode.h"',
        "",
        'const char mg_uc_version[] = "16.0 (Debian UCD 15.0.0 + 15.1/16.0 delta)";',
        "",
        "const uint16_t mg_uc_stage1[0x1100] = {",
        hex_rows(stage1, 4, 12),
        "};",
        "",
        "const uint8_t mg_uc_stage2[%d * 256] = {" % len(blocks),
        hex_rows(flat, 2, 16),
        "};",
        "",
        "const uint32_t mg_uc_fold_ascii[%d][2] = {" % len(folds),
        "\n".join("    {0x%04x, 0x%02x}," % f for f in folds),
        "};",
        "const size_t mg_uc_fold_ascii_n = %d;" % len(folds),
        "",
    ]
    return "\n".join(parts)


def probe_delta(ucd):
    """Classifies every code point with both peers and prints POST_15_0 (needs the venv)."""
    from tokenizers import Regex, pre_tokenizers
    import tiktoken

    text = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    ranks = {bytes([i]): i for i in range(256)}

    def hf_set(prop):
        sp = pre_tokenizers.Split(Regex(prop + "+"), "removed", invert=True)
        return {ord(ch) for piece, _ in sp.pre_tokenize_str(text) for ch in piece}

    def tk_set(prop):
        enc = tiktoken.Encoding(name="probe", pat_str=prop, mergeable_ranks=ranks,
                                special_tokens={})
        return set(map(ord, bytes(enc.encode_ordinary(text)).decode("utf-8")))

    peer = [0] * 0x110000
    for i, gc in enumerate(CATS[1:], 1):
        prop = r"\p{%s}" % gc
        h, t = hf_set(prop), tk_set(prop)
        if h != t:
            sys.exit("peers disagree on %s: %s" % (prop, sorted(h ^ t)[:10]))
        for c in h:
            peer[c] = i
    han = hf_set(r"\p{Han}")
    if han != tk_set(r"\p{Han}"):
        sys.exit("peers disagree on \\p{Han}")
    base = base_table(ucd)
    rows = []
    for c in range(0x110000):
        b_cat, b_han = base[c] & 15, bool(base[c] & HAN_BIT)
        if (peer[c], c in han) == (b_cat, b_han):
            continue
        key = (CATS[peer[c]], c in han)
        if rows and rows[-1][1] == c - 1 and rows[-1][2:] == list(key):
            rows[-1][1] = c
        else:
            rows.append([c, c, *key])
    for a, b, gc, h in rows:
        print('    (0x%04X, 0x%04X, "%s"%s),' % (a, b, gc, ", HAN" if h else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ucd", default="/usr/share/unicode")
    ap.add_argument("-o", "--output", default=None)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--probe-delta", action="store_true")
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = args.output or os.path.join(root, "libcommon", "base", "unicode_tables.c")
    if args.probe_delta:
        probe_delta(args.ucd)
        return 0
    text = render(args.ucd)
    if args.check:
        with open(out, encoding="utf-8") as f:
            same = f.read() == text
        print("%s: %s" % (out, "up to date" if same else "DIFFERS from the generator output"))
        return 0 if same else 1
    with open(out, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
