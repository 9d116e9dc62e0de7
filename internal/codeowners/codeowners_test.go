package codeowners

import (
	"strings"
	"testing"

	"github.com/astra-gitops/astra/internal/model"
)

// TestMatch holds the patterns to GitHub's documented rules.
func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		yes, no []string
	}{
		{"*", []string{"a", "a/b", "x/y/z.go"}, nil},
		{"*.js", []string{"app.js", "src/app.js"}, []string{"app.jsx", "src/app.ts"}},
		{"/build/logs/", []string{"build/logs/a", "build/logs/x/y"}, []string{"build/logs", "x/build/logs/a"}},
		{"docs/*", []string{"docs/a.md"}, []string{"docs/build-app/t.md", "x/docs/a.md", "docs"}},
		{"apps/", []string{"apps/a", "x/apps/b/c"}, []string{"apps", "apps.txt"}},
		{"/docs/", []string{"docs/a", "docs/a/b"}, []string{"x/docs/a"}},
		{"/scripts/", []string{"scripts/deploy.sh"}, []string{"tools/scripts/x"}},
		{"**/logs", []string{"logs", "deep/logs", "deep/logs/x"}, []string{"logsx"}},
		{"/apps/github", []string{"apps/github", "apps/github/x"}, []string{"apps/githubx", "x/apps/github"}},
		{"foo", []string{"foo", "foo/bar", "bar/foo", "bar/foo/baz"}, []string{"foo.txt", "bar/foo.txt"}},
		{"/foo", []string{"foo", "foo/bar"}, []string{"bar/foo"}},
		{"/*", []string{"foo"}, []string{"foo/bar"}},
		{"f*", []string{"foo", "foo/bar", "bar/foo"}, []string{"bar/baz"}},
		{"foo/**/bar", []string{"foo/bar", "foo/x/y/bar", "foo/bar/baz"}, []string{"x/foo/bar"}},
		{"foo/bar/**", []string{"foo/bar/baz", "foo/bar/baz/qux"}, []string{"foo/bar"}},
		{"f?o", []string{"foo"}, []string{"fo", "fooo"}},
		{`f\*o`, []string{"f*o"}, []string{"foo"}},
		{".astra.yaml", []string{".astra.yaml", "x/.astra.yaml"}, []string{"astra.yaml"}},
	} {
		f := Parse("CODEOWNERS", []byte(tc.pattern+" @o"))
		if len(f.Rules) != 1 {
			t.Fatalf("%q: not read", tc.pattern)
		}
		for _, p := range tc.yes {
			if !f.Rules[0].Match(p) {
				t.Errorf("%q does not match %q", tc.pattern, p)
			}
		}
		for _, p := range tc.no {
			if f.Rules[0].Match(p) {
				t.Errorf("%q matches %q", tc.pattern, p)
			}
		}
	}
}

// TestOwners: the last matching line wins; a line without owners leaves
// its paths unowned; comments and unreadable lines are left out.
func TestOwners(t *testing.T) {
	f := Parse(".github/CODEOWNERS", []byte(`# owners
*       @global
/apps/ @octocat   # the apps
/apps/github
!negated @x
[ab].txt @y
`))
	if len(f.Rules) != 3 {
		t.Fatalf("rules %v", f.Rules)
	}
	for path, want := range map[string]string{"README": "@global", "apps/x": "@octocat", "apps/github/y": "", "src/a.go": "@global"} {
		owners, _ := f.Owners(path)
		if got := strings.Join(owners, " "); got != want {
			t.Errorf("%s: owners %q, want %q", path, got, want)
		}
	}
}

// TestOwned: a writes glob is refused when it can match a path the file
// gives owners, and a witness path says which; exactly, for globs the
// CODEOWNERS patterns only partly cover.
func TestOwned(t *testing.T) {
	f := Parse("CODEOWNERS", []byte("/scripts/ @ops\n*.sh @ops\n/reports/secret.md @ops\n/site/ @web\n/site/public/ \n"))
	for _, tc := range []struct {
		glob, witness string
		line          int
	}{
		{"reports/**", "reports/a.sh", 2},
		{"reports/*.md", "reports/secret.md", 3},
		{"reports/*.txt", "", 0},
		{"out/**", "out/a.sh", 2},
		{"out/*.[a-q]", "", 0},
		{"out/*.[r-t]?", "out/a.sh", 2},
		{"out/[!a]", "", 0},
		{"scripts/tools/**", "scripts/tools", 1},
		{"site/public/**", "site/public", 4},
		{"site/public/*/**", "", 0},
		{"**", "scripts", 1},
		{"notes/*.md", "", 0},
	} {
		path, rule, found := f.Owned(tc.glob)
		line := 0
		if found {
			line = rule.Line
		}
		if found != (tc.witness != "") || line != tc.line {
			t.Errorf("%s: found %v (%q, line %d), want %q at line %d", tc.glob, found, path, line, tc.witness, tc.line)
			continue
		}
		if found && (!model.Glob(tc.glob, path) || !rule.Match(path)) {
			t.Errorf("%s: witness %q is not a path both match", tc.glob, path)
		}
		if found {
			if owners, _ := f.Owners(path); len(owners) == 0 {
				t.Errorf("%s: witness %q is not owned", tc.glob, path)
			}
		}
	}
}

// TestGlobLanguage holds the glob translation to model.Glob, path by path.
func TestGlobLanguage(t *testing.T) {
	paths := []string{"a", "b", "a/b", "a/b/c", "x/a/b", "a.md", "r/a.md", "r/s/a.md", "reports", "reports/x", "reports/x/y", "q", "[", "a*b"}
	for _, g := range []string{"a", "a/*", "a/**", "**/b", "a/**/c", "**", "r/*.md", "*.md", "reports/**", "?", "[a-b]", "[^a]", `\[`, `a\*b`, "*/*/*"} {
		prog := compile(globRegexp(g))
		for _, p := range paths {
			if want := model.Glob(g, p); matches(prog, p) != want {
				t.Errorf("glob %q on %q: %v, model.Glob says %v", g, p, !want, want)
			}
		}
	}
}

func TestOverlap(t *testing.T) {
	for _, tc := range []struct {
		glob string
		want string
	}{
		{"docs/**", "docs/CODEOWNERS"},
		{"docs/*.md", ""},
		{".github/**", ".github/a"},
		{"scripts/deploy.sh", "scripts/deploy.sh"},
		{"scripts/*", "scripts/deploy.sh"},
		{"reports/**", ""},
	} {
		path, which, found := Overlap(tc.glob, "/CODEOWNERS", "/docs/CODEOWNERS", "/.github/", "/scripts/deploy.sh")
		if found != (tc.want != "") || found && path != tc.want {
			t.Errorf("%s: %q (pattern %d) found %v, want %q", tc.glob, path, which, found, tc.want)
		}
	}
}
