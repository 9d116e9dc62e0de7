// Package codeowners reads a repository's CODEOWNERS file as GitHub reads
// it, and tells whether a glob of astra's (a tool's writes:) can match a
// path that it, or a list of such patterns, covers.
//
// GitHub's rules (docs: "About code owners"): the first of Files that
// exists is the one used; each line is a pattern and owners; the last
// matching line wins, and a line without owners leaves its paths
// unowned. Patterns follow gitignore with exceptions: no `!`, no `[ ]`,
// no `\#`. A pattern with a slash at its start or in its middle is
// anchored at the root, one without matches at any depth; a trailing
// slash matches everything beneath a directory; a pattern also matches
// everything beneath the paths it names, except that a last segment `*`
// matches direct children only (`docs/*`).
//
// Overlap decides exactly, not by sampling paths: both kinds of pattern
// are regular languages, and it searches the product of their automata
// (and of the later rules', for "last match wins") for a path.
package codeowners

import (
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Files are where GitHub looks for CODEOWNERS, in its order.
var Files = []string{".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS"}

// Rule is one line of a CODEOWNERS file.
type Rule struct {
	Pattern string
	Owners  []string
	Line    int
	prog    *syntax.Prog
}

// File is a parsed CODEOWNERS file.
type File struct {
	Path    string
	Rules   []*Rule
	Skipped []Problem // lines GitHub would not accept either
}

// Problem is a line of the file that is left out, and why.
type Problem struct {
	Line int
	Msg  string
}

func (p Problem) String() string { return "line " + strconv.Itoa(p.Line) + ": " + p.Msg }

// Parse reads a CODEOWNERS file. Lines GitHub would not accept either (a
// pattern it cannot read) are left out.
func Parse(path string, data []byte) *File {
	f := &File{Path: path}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		var owners []string
		for _, o := range fields[1:] {
			if strings.HasPrefix(o, "#") {
				break
			}
			owners = append(owners, o)
		}
		r := &Rule{Pattern: fields[0], Owners: owners, Line: i + 1}
		if r.prog = compile(ownerRegexp(r.Pattern)); r.prog != nil {
			f.Rules = append(f.Rules, r)
		} else {
			f.Skipped = append(f.Skipped, Problem{r.Line, "GitHub cannot read the pattern " + strconv.Quote(r.Pattern)})
		}
	}
	return f
}

// Match reports whether the rule's pattern matches path (a slash path
// relative to the repository root).
func (r *Rule) Match(path string) bool { return matches(r.prog, path) }

// Owners are the owners of path: the last matching rule's (none when no
// rule matches, or the last one has none), with that rule.
func (f *File) Owners(path string) ([]string, *Rule) {
	for i := len(f.Rules) - 1; i >= 0; i-- {
		if r := f.Rules[i]; r.Match(path) {
			return r.Owners, r
		}
	}
	return nil, nil
}

// Owned finds a path that glob can match and the file gives owners, with
// the rule that owns it. glob is an astra path glob (model.Glob: `*`, `?`
// and classes within a segment, `**` across).
func (f *File) Owned(glob string) (path string, rule *Rule, found bool) {
	w := compile(globRegexp(glob))
	if w == nil {
		return "", nil, false
	}
	for i, r := range f.Rules {
		if len(r.Owners) == 0 {
			continue
		}
		// Later rules decide the paths they match: only those that can
		// match a path of glob's take part.
		var later []*syntax.Prog
		for _, l := range f.Rules[i+1:] {
			if _, ok := search(w, []*syntax.Prog{l.prog}, nil); ok {
				later = append(later, l.prog)
			}
		}
		if p, ok := search(w, []*syntax.Prog{r.prog}, later); ok {
			return p, r, true
		}
	}
	return "", nil, false
}

// Overlap finds a path that glob can match and one of patterns (in
// CODEOWNERS syntax) covers; which is that pattern's index.
func Overlap(glob string, patterns ...string) (path string, which int, found bool) {
	w := compile(globRegexp(glob))
	if w == nil {
		return "", 0, false
	}
	for i, pat := range patterns {
		if p := compile(ownerRegexp(pat)); p != nil {
			if path, ok := search(w, []*syntax.Prog{p}, nil); ok {
				return path, i, true
			}
		}
	}
	return "", 0, false
}

// ownerRegexp is a CODEOWNERS pattern as a regular expression over slash
// paths; "" when GitHub would not read it.
func ownerRegexp(pattern string) string {
	segs := ownerSegments(pattern)
	if segs == nil {
		return ""
	}
	var b strings.Builder
	last := len(segs) - 1
	slash := false // a segment before needs a slash after it
	for i, seg := range segs {
		if seg == "**" {
			b.WriteString(ownerDoubleStar(i == 0, i == last))
			slash = i > 0
			continue
		}
		if slash {
			b.WriteString(`/`)
		}
		slash = true
		if seg == "*" {
			b.WriteString(`[^/]+`) // direct children only: no descendants
			continue
		}
		if !segment(&b, seg, false) {
			return ""
		}
		if i == last {
			b.WriteString(`(?:/.+)?`) // and everything beneath
		}
	}
	return b.String()
}

// ownerSegments splits a CODEOWNERS pattern into the segments it matches
// from the root; nil when GitHub would not read it.
func ownerSegments(pattern string) []string {
	if pattern == "" || pattern == "/" || strings.Contains(pattern, "***") || strings.ContainsAny(pattern, "[]!") {
		return nil
	}
	segs := strings.Split(pattern, "/")
	if segs[0] == "" {
		segs = segs[1:] // anchored at the root
	} else if len(segs) == 1 || len(segs) == 2 && segs[1] == "" {
		segs = append([]string{"**"}, segs...) // one segment: at any depth
	}
	if len(segs) > 1 && segs[len(segs)-1] == "" {
		segs[len(segs)-1] = "**" // a trailing slash: everything beneath
	}
	return segs
}

// ownerDoubleStar is "**" of a CODEOWNERS pattern by where it stands.
func ownerDoubleStar(first, last bool) string {
	switch {
	case first && last:
		return `.+`
	case first:
		return `(?:.+/)?`
	case last:
		return `/.+`
	}
	return `(?:/.+)?`
}

// globRegexp is an astra path glob (model.Glob) as a regular expression
// over slash paths; "" when it is not a valid glob.
func globRegexp(glob string) string {
	segs := strings.Split(glob, "/")
	var b strings.Builder
	for i, seg := range segs {
		first, last := i == 0, i == len(segs)-1
		if seg == "**" {
			switch {
			case first && last:
				b.WriteString(`(?:[^/]+(?:/[^/]+)*)?`)
			case first:
				b.WriteString(`(?:[^/]+/)*`)
			case last:
				b.WriteString(`(?:/[^/]+)*`)
			default:
				b.WriteString(`/(?:[^/]+/)*`)
			}
			continue
		}
		if !first && segs[i-1] != "**" {
			b.WriteString(`/`)
		}
		if !segment(&b, seg, true) {
			return ""
		}
	}
	return b.String()
}

// segment writes one segment's wildcards and literals (classes too, for
// astra's globs, which path.Match reads) as a regular expression.
func segment(b *strings.Builder, seg string, classes bool) bool {
	for i := 0; i < len(seg); {
		c := seg[i]
		switch {
		case c == '*':
			b.WriteString(`[^/]*`)
			i++
		case c == '?':
			b.WriteString(`[^/]`)
			i++
		case c == '\\' && i+1 < len(seg):
			r, n := utf8.DecodeRuneInString(seg[i+1:])
			b.WriteString(regexp.QuoteMeta(string(r)))
			i += 1 + n
		case c == '[' && classes:
			n, ok := class(b, seg[i:])
			if !ok {
				return false
			}
			i += n
		default:
			r, n := utf8.DecodeRuneInString(seg[i:])
			b.WriteString(regexp.QuoteMeta(string(r)))
			i += n
		}
	}
	return true
}

// class writes a path.Match character class (at the start of s) as a
// regular expression class that never matches a slash, and says how long
// it was.
func class(b *strings.Builder, s string) (int, bool) {
	i := 1
	neg := i < len(s) && s[i] == '^'
	if neg {
		i++
	}
	var ranges [][2]rune
	read := func() (rune, bool) {
		if i < len(s) && s[i] == '\\' {
			i++
		}
		if i >= len(s) {
			return 0, false
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		return r, true
	}
	for first := true; ; first = false {
		if i >= len(s) {
			return 0, false
		}
		if s[i] == ']' && !first {
			i++
			break
		}
		lo, ok := read()
		if !ok {
			return 0, false
		}
		hi := lo
		if i+1 < len(s) && s[i] == '-' && s[i+1] != ']' {
			i++
			if hi, ok = read(); !ok || hi < lo {
				return 0, false
			}
		}
		ranges = append(ranges, [2]rune{lo, hi})
	}
	b.WriteString("[")
	if neg {
		b.WriteString(`^/`)
	}
	for _, r := range ranges {
		for _, part := range withoutSlash(r, neg) {
			b.WriteString(`\x{` + strconv.FormatInt(int64(part[0]), 16) + `}-\x{` + strconv.FormatInt(int64(part[1]), 16) + `}`)
		}
	}
	if !neg && len(ranges) > 0 && slices.Equal(ranges, [][2]rune{{'/', '/'}}) {
		return 0, false // a class of only a slash matches nothing in a segment
	}
	b.WriteString("]")
	return i, true
}

// withoutSlash is a range less '/' (a negated class excludes it already).
func withoutSlash(r [2]rune, neg bool) [][2]rune {
	if neg || r[1] < '/' || r[0] > '/' {
		return [][2]rune{r}
	}
	var out [][2]rune
	if r[0] < '/' {
		out = append(out, [2]rune{r[0], '/' - 1})
	}
	if r[1] > '/' {
		out = append(out, [2]rune{'/' + 1, r[1]})
	}
	return out
}

func compile(re string) *syntax.Prog {
	if re == "" {
		return nil
	}
	parsed, err := syntax.Parse(re, syntax.Perl)
	if err != nil {
		return nil
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		return nil
	}
	return prog
}
