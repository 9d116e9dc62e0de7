// Package codeowners reads a CODEOWNERS file the way GitHub does: which
// file GitHub uses, its patterns (gitignore's, without negation or
// character ranges, where a trailing "/*" does not reach into
// subdirectories) and the rule that the last matching line wins.
package codeowners

import (
	"fmt"
	"regexp"
	"strings"
)

// Paths are where GitHub looks for the file, in its order: the first
// that exists is the one it uses.
var Paths = []string{".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS"}

// File is a parsed CODEOWNERS file.
type File struct {
	Rules []Rule
}

// Rule is one line: a pattern and its owners (none: the paths it matches
// have no owner).
type Rule struct {
	Line    int
	Pattern string
	Owners  []string
	re      *regexp.Regexp
}

// Problem is a line GitHub skips.
type Problem struct {
	Line int
	Msg  string
}

func (p Problem) String() string { return fmt.Sprintf("line %d: %s", p.Line, p.Msg) }

var ownerRE = regexp.MustCompile(`^(@[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(/[A-Za-z0-9][A-Za-z0-9_.-]*)?|[^@\s]+@[^@\s]+\.[^@\s]+)$`)

// Parse reads a CODEOWNERS file. Lines GitHub would skip are left out
// and reported.
func Parse(data []byte) (File, []Problem) {
	var f File
	var problems []Problem
	for i, line := range strings.Split(string(data), "\n") {
		n := i + 1
		fields := splitFields(strings.TrimSpace(strings.TrimSuffix(line, "\r")))
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		pattern, owners := fields[0], fields[1:]
		for j, o := range owners {
			if strings.HasPrefix(o, "#") { // a comment after the owners
				owners = owners[:j]
				break
			}
		}
		re, err := compile(pattern)
		if err != nil {
			problems = append(problems, Problem{n, fmt.Sprintf("%s: %v", pattern, err)})
			continue
		}
		bad := ""
		for _, o := range owners {
			if !ownerRE.MatchString(o) {
				bad = o
				break
			}
		}
		if bad != "" {
			problems = append(problems, Problem{n, fmt.Sprintf("%q is not a @user, @org/team or email owner", bad)})
			continue
		}
		f.Rules = append(f.Rules, Rule{Line: n, Pattern: pattern, Owners: owners, re: re})
	}
	return f, problems
}

// splitFields splits at unescaped spaces (a pattern may hold "\ ").
func splitFields(s string) []string {
	var out []string
	var b strings.Builder
	escaped := false
	for _, r := range s {
		switch {
		case escaped:
			b.WriteRune('\\')
			b.WriteRune(r)
			escaped = false
		case r == '\\':
			escaped = true
		case r == ' ' || r == '\t':
			if b.Len() > 0 {
				out = append(out, b.String())
				b.Reset()
			}
		default:
			b.WriteRune(r)
		}
	}
	if escaped {
		b.WriteRune('\\')
	}
	if b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}

// Match is the rule that decides path's owners (a slash path relative to
// the repository root): the last that matches; nil when none does.
func (f File) Match(path string) *Rule {
	path = strings.Trim(path, "/")
	for i := len(f.Rules) - 1; i >= 0; i-- {
		if f.Rules[i].re.MatchString(path) {
			return &f.Rules[i]
		}
	}
	return nil
}

// Owners are path's code owners; none when no rule matches or the last
// matching rule names nobody.
func (f File) Owners(path string) []string {
	if r := f.Match(path); r != nil {
		return r.Owners
	}
	return nil
}

// compile turns a pattern into a regular expression over slash paths.
func compile(pattern string) (*regexp.Regexp, error) {
	switch {
	case strings.HasPrefix(pattern, "!"):
		return nil, fmt.Errorf("negation (!) is not supported")
	case strings.ContainsAny(pattern, "[]"):
		return nil, fmt.Errorf("character ranges ([ ]) are not supported")
	}
	p := pattern
	dirOnly := strings.HasSuffix(p, "/")
	p = strings.TrimSuffix(p, "/")
	anchored := strings.HasPrefix(p, "/") || strings.Contains(p, "/")
	p = strings.TrimPrefix(p, "/")
	if p == "" {
		return nil, fmt.Errorf("empty pattern")
	}
	segs := strings.Split(p, "/")
	var b strings.Builder
	b.WriteString("^")
	if !anchored {
		b.WriteString("(?:.*/)?")
	}
	last := segs[len(segs)-1]
	for i, seg := range segs {
		isLast := i == len(segs)-1
		switch {
		case seg == "**" && isLast:
			b.WriteString(".+")
		case seg == "**":
			b.WriteString("(?:.+/)?")
		case seg == "":
			return nil, fmt.Errorf("empty path segment")
		default:
			b.WriteString(segment(seg))
			if !isLast {
				b.WriteString("/")
			}
		}
	}
	switch {
	case last == "**":
	case dirOnly:
		b.WriteString("/.+")
	case last == "*" && anchored:
		// "docs/*" owns the files in docs/, not those further down.
	default:
		b.WriteString("(?:/.*)?") // a match names a file or everything in a directory
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}

// segment translates one path segment: * and ? stay within it, a
// backslash escapes the next character.
func segment(seg string) string {
	var b strings.Builder
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		switch {
		case c == '\\' && i+1 < len(seg):
			i++
			b.WriteString(regexp.QuoteMeta(seg[i : i+1]))
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		default:
			b.WriteString(regexp.QuoteMeta(seg[i : i+1]))
		}
	}
	return b.String()
}
