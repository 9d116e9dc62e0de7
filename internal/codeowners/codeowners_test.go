package codeowners

import (
	"slices"
	"strings"
	"testing"
)

// GitHub's pattern rules (docs: "About code owners"), path by path.
func TestPatterns(t *testing.T) {
	for _, c := range []struct {
		pattern string
		match   []string
		miss    []string
	}{
		{"*", []string{"a", "a/b", "a/b/c.go"}, nil},
		{"*.js", []string{"a.js", "src/a.js", "src/deep/a.js"}, []string{"a.jsx", "a.ts"}},
		{"docs", []string{"docs", "docs/a.md", "src/docs", "src/docs/a.md"}, []string{"docsy", "a/docs.md"}},
		{"/docs", []string{"docs", "docs/a/b.md"}, []string{"src/docs", "src/docs/a.md"}},
		{"apps/", []string{"apps/a", "apps/a/b", "src/apps/a"}, []string{"apps", "src/apps"}},
		{"/build/logs/", []string{"build/logs/a.log", "build/logs/x/y.log"}, []string{"build/logs", "src/build/logs/a.log"}},
		{"docs/*", []string{"docs/a.md"}, []string{"docs", "docs/build/a.md", "x/docs/a.md"}},
		{"/*", []string{"README.md", ".astra.yaml"}, []string{"docs/a.md"}},
		{"/*/", []string{"docs/a.md", "a/b/c"}, []string{"README.md"}},
		{"docs/*.md", []string{"docs/a.md"}, []string{"docs/x/a.md", "src/docs/a.md"}},
		{"foo/*/baz", []string{"foo/bar/baz", "foo/bar/baz/qux"}, []string{"foo/baz", "foo/a/b/baz"}},
		{"**/logs", []string{"logs", "a/logs", "a/b/logs/x.log"}, []string{"alogs"}},
		{"foo/**/bar", []string{"foo/bar", "foo/x/bar", "foo/x/y/bar/z"}, []string{"x/foo/bar"}},
		{"foo/bar/**", []string{"foo/bar/x", "foo/bar/x/y"}, []string{"foo/bar", "x/foo/bar/y"}},
		{"f?o", []string{"foo", "fao/x"}, []string{"fo", "fooo"}},
		{`f\*o`, []string{"f*o"}, []string{"foo"}},
		{"/.github/CODEOWNERS", []string{".github/CODEOWNERS"}, []string{".github/workflows/a.yml", "CODEOWNERS"}},
		{"/scripts/tools/", []string{"scripts/tools/a.sh", "scripts/tools/x/y.sh"}, []string{"scripts/tools", "scripts/a.sh"}},
	} {
		re, err := compile(c.pattern)
		if err != nil {
			t.Errorf("%s: %v", c.pattern, err)
			continue
		}
		for _, p := range c.match {
			if !re.MatchString(p) {
				t.Errorf("%q does not match %q", c.pattern, p)
			}
		}
		for _, p := range c.miss {
			if re.MatchString(p) {
				t.Errorf("%q matches %q", c.pattern, p)
			}
		}
	}
}

func TestLastMatchWinsAndProblems(t *testing.T) {
	f, problems := Parse([]byte(strings.Join([]string{
		"# owners",
		"*       @octo/all",
		"/docs/  docs@example.com   # writers",
		"/docs/generated/",
		"!/keep  @octo/all",
		"[ab].go @octo/all",
		"/x      not-an-owner",
		`/with\ space @alice`,
		"",
	}, "\n")))
	want := []string{"line 5: !/keep: negation (!) is not supported", "line 6: [ab].go: character ranges ([ ]) are not supported",
		`line 7: "not-an-owner" is not a @user, @org/team or email owner`}
	var got []string
	for _, p := range problems {
		got = append(got, p.String())
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems = %q", got)
	}
	for path, owners := range map[string][]string{
		"main.go":              {"@octo/all"},
		"docs/a.md":            {"docs@example.com"},
		"docs/generated/x.md":  nil, // a later line with no owner takes them away
		"with space":           {"@alice"},
		"x":                    {"@octo/all"}, // the invalid line is skipped
		"src/docs/generated/x": {"@octo/all"},
	} {
		if got := f.Owners(path); !slices.Equal(got, owners) {
			t.Errorf("%s: owners %q, want %q", path, got, owners)
		}
	}
	if r := f.Match("docs/a.md"); r == nil || r.Line != 3 {
		t.Errorf("docs/a.md matched %+v", r)
	}
}
