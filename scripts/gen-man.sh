#!/usr/bin/env bash
# gen-man.sh TOOL TEMPLATE VERSION — writes TOOL's man page (roff, man macros) on stdout:
# TEMPLATE (docs/man/NAME.1.in: NAME, FILES, EXAMPLES, SEE ALSO written by hand) with
#   @VERSION@      VERSION
#   @SYNOPSIS@     the usage lines of `TOOL --help`
#   @DESCRIPTION@  the rest of `TOOL --help`: paragraphs, "Heading:" lines as subsections,
#                  "  --flag ARG   text" lines as tagged paragraphs, "  - item" as bullets
#   @EXIT_STATUS@  the paragraph of `TOOL --help` that starts with "Exit status:"
# so that the man page says what --help says, flag for flag (tests/install/ checks it).
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 TOOL TEMPLATE VERSION" >&2; exit 2; }
tool=$1 template=$2 version=$3
help=$("$tool" --help)
name=$(basename "$tool")

# help text -> three roff fragments, separated by lines "@@SYNOPSIS", "@@DESCRIPTION",
# "@@EXIT_STATUS".
roff=$(printf '%s\n' "$help" | awk -v name="$name" '
function esc(s) {                       # roff-escape text, flags in bold
    gsub(/\\/, "\\e", s)
    s = flags_bold(s)
    if (substr(s, 1, 1) == "." || substr(s, 1, 1) == "\047") s = "\\&" s
    return s
}
function flag(f) { gsub(/-/, "\\-", f); return "\\fB\\%" f "\\fR" }
function flags_bold(s,   out, m) {
    out = ""
    while (match(s, /(^|[ ([{|,;"])--?[A-Za-z][-A-Za-z0-9_]*/)) {
        m = substr(s, RSTART, RLENGTH)
        if (m !~ /^-/) { out = out substr(s, 1, RSTART); m = substr(m, 2) }
        else out = out substr(s, 1, RSTART - 1)
        out = out flag(m)
        s = substr(s, RSTART + RLENGTH)
    }
    return out s
}
function term(s,   n, w, i, out) {      # "--flag ARG..." : flags bold, metavars italic
    n = split(s, w, / +/)
    out = ""
    for (i = 1; i <= n; i++) {
        if (w[i] ~ /^[A-Z][A-Z0-9_]*(\.\.\.)?,?$/) {
            sub(/^/, "\\fI", w[i]); sub(/(\.\.\.)?,?$/, "\\fR&", w[i])
        } else w[i] = esc(w[i])
        out = out (i > 1 ? " " : "") w[i]
    }
    return out
}
function trim(s) { sub(/^ +/, "", s); sub(/ +$/, "", s); return s }
function emit(s) { out[sect] = out[sect] s "\n" }
function synopsis_line(s,   n, w, i, rest) {
    n = split(trim(s), w, / +/)
    gsub(/-/, "\\-", w[1]); emit(".SY " w[1])
    rest = ""
    for (i = 2; i <= n; i++) rest = rest (i > 2 ? " " : "") w[i]
    if (rest != "") emit(term(rest))
    emit(".YS")
}
# "--flag ARG text" with single spaces: the term is the flags and their metavars (capitals,
# a|b choices, [optional] parts), the text what follows (sets TERM and DESC).
function split_words(l,   n, w, i) {
    n = split(l, w, / /)
    TERM = w[1]; DESC = ""
    for (i = 2; i <= n && w[i] ~ /^([-[]|[A-Z][A-Z0-9_]*(\.\.\.)?[],]*$|.*\|)/; i++) TERM = TERM " " w[i]
    for (; i <= n; i++) DESC = DESC (DESC == "" ? "" : " ") w[i]
}
# one paragraph of the help text (lines p[1..np])
function paragraph(   i, j, l, head, t, k) {
    if (p[1] ~ /^Exit status:/) {
        sect = "EXIT_STATUS"; sub(/^Exit status: */, "", p[1])
        emit(".PP")
        for (i = 1; i <= np; i++) emit(esc(trim(p[i])))
        sect = "DESCRIPTION"
        return
    }
    i = 1
    if (p[1] !~ /^ /) {                 # text at column 0 (a heading when short and ends in :)
        head = ""
        while (i <= np && p[i] !~ /^ /) { head = head (head == "" ? "" : "\n") p[i]; i++ }
        if (head !~ /\n/ && head ~ /:$/ && length(head) <= 50 && i <= np) {
            sub(/:$/, "", head); emit(".SS " esc(head))
        } else {
            emit(".PP")
            k = split(head, t, "\n")
            for (j = 1; j <= k; j++) emit(esc(t[j]))
        }
    }
    item = ""
    for (; i <= np; i++) {
        l = p[i]
        if (l ~ /^  -[-A-Za-z]/) {       # an option: term, then its text after 2+ spaces
            l = trim(l)
            if (match(l, /  +[^- ]/)) { TERM = substr(l, 1, RSTART - 1); DESC = substr(l, RSTART + RLENGTH - 1) }
            else if (l !~ /  /) split_words(l)
            else { TERM = l; DESC = "" }
            emit(".TP 7"); emit(term(trim(TERM)))
            if (DESC != "") emit(esc(trim(DESC)))
            item = "option"
        } else if (l ~ /^ +- /) {        # a bullet item
            l = trim(l); sub(/^- /, "", l)
            emit(".IP \\(bu 2"); emit(esc(l))
            item = "bullet"
        } else if (item == "text" || (item != "" && l ~ /^   /)) { # continues the item above
            emit(esc(trim(l)))
        } else {                         # indented text
            emit(".IP \"\" 2"); emit(esc(trim(l)))
            item = "text"
        }
    }
}
BEGIN { sect = "SYNOPSIS"; state = "usage"; np = 0 }
state == "usage" {
    if (NR == 1) { sub(/^[Uu]sage: */, ""); line = $0; next }
    if ($0 ~ /^ +[^ ]/) {
        if (trim($0) ~ ("^" name " ")) { synopsis_line(line); line = trim($0) }
        else line = line " " trim($0)
        next
    }
    synopsis_line(line)
    state = "body"; sect = "DESCRIPTION"
}
/^$/ { if (np) paragraph(); np = 0; next }
{ p[++np] = $0 }
END {
    if (state == "usage") synopsis_line(line)
    if (np) paragraph()
    printf "@@SYNOPSIS\n%s@@DESCRIPTION\n%s@@EXIT_STATUS\n%s", out["SYNOPSIS"], out["DESCRIPTION"], out["EXIT_STATUS"]
}')

part() { printf '%s\n' "$roff" | awk -v want="$1" '/^@@/ { on = ($0 == "@@" want); next } on'; }
synopsis=$(part SYNOPSIS) description=$(part DESCRIPTION) exit_status=$(part EXIT_STATUS)
[ -n "$synopsis" ] && [ -n "$description" ] && [ -n "$exit_status" ] ||
  { echo "$0: $tool --help: no usage line, description or 'Exit status:' paragraph" >&2; exit 1; }
while IFS= read -r l; do
  case $l in
    @SYNOPSIS@) printf '%s\n' "$synopsis" ;;
    @DESCRIPTION@) printf '%s\n' "$description" ;;
    @EXIT_STATUS@) printf '%s\n' "$exit_status" ;;
    *) printf '%s\n' "${l//@VERSION@/$version}" ;;
  esac
done <"$template"
