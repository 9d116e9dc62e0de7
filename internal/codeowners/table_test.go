package codeowners

import "testing"

// GitHub's pattern rules (docs: "About code owners"), path by path.
func TestPatternTable(t *testing.T) {
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
		f := Parse("CODEOWNERS", []byte(c.pattern+" @o\n"))
		if len(f.Rules) != 1 {
			t.Errorf("%s: not read", c.pattern)
			continue
		}
		re := f.Rules[0]
		for _, p := range c.match {
			if !re.Match(p) {
				t.Errorf("%q does not match %q", c.pattern, p)
			}
		}
		for _, p := range c.miss {
			if re.Match(p) {
				t.Errorf("%q matches %q", c.pattern, p)
			}
		}
	}
}

// Lines GitHub cannot read are left out and said, so a check can tell
// why a path it expected to be owned is not.
func TestSkippedLines(t *testing.T) {
	f := Parse("CODEOWNERS", []byte("* @all\n!/keep @all\n[ab].go @all\n/docs/ @docs\n"))
	if len(f.Rules) != 2 || len(f.Skipped) != 2 || f.Skipped[0].Line != 2 || f.Skipped[1].Line != 3 {
		t.Fatalf("rules %d, skipped %v", len(f.Rules), f.Skipped)
	}
	if owners, _ := f.Owners("docs/a.md"); len(owners) != 1 || owners[0] != "@docs" {
		t.Errorf("owners of docs/a.md = %v", owners)
	}
}
