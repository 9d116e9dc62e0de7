package buildinfo

import (
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	vcs := &debug.BuildInfo{
		Main: debug.Module{Path: "github.com/astra-gitops/astra", Version: "(devel)"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-11-23T09:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	for _, tc := range []struct {
		name                  string
		version, commit, date string
		bi                    *debug.BuildInfo
		want                  string
	}{
		{"ldflags win", "v1.2.3", "fedcba9876543210fedcba9876543210fedcba98", "2026-11-01T00:00:00Z", vcs,
			"v1.2.3 (commit fedcba987654, 2026-11-01T00:00:00Z)"},
		{"checkout", "", "", "", vcs, "dev (commit 0123456789ab-dirty, 2026-11-23T09:00:00Z)"},
		{"go install @version", "", "", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, "v1.4.0"},
		{"nothing known", "", "", "", nil, "dev"},
		{"ldflags version only", "v2.0.0", "", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "v2.0.0"},
	} {
		if got := resolve(tc.version, tc.commit, tc.date, tc.bi).String(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestIsRelease(t *testing.T) {
	for v, want := range map[string]bool{
		"v1.2.3":                               true,
		"v0.1.0":                               true,
		"v1.3.0-rc.1":                          true,
		"v1.2.3-dev+abc1234":                   false, // a snapshot
		"v0.0.0-20261123090000-0123456789ab":   false,
		"v1.2.4-0.20261123090000-0123456789ab": false,
		"1.2.3":                                false,
		"v1":                                   false,
		"v1.2":                                 false,
		"dev":                                  false,
		"main":                                 false,
		"":                                     false,
	} {
		if got := IsRelease(v); got != want {
			t.Errorf("IsRelease(%q) = %v", v, got)
		}
	}
}

// TestLdflags builds a program with the flags the release build uses and
// checks that they reach String.
func TestLdflags(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	bin := filepath.Join(t.TempDir(), "printinfo")
	const pkg = "github.com/astra-gitops/astra/internal/buildinfo"
	ldflags := "-X " + pkg + ".version=v9.8.7 -X " + pkg + ".commit=0123456789abcdef0123456789abcdef01234567 -X " + pkg + ".date=2026-11-23T09:00:00Z"
	if out, err := exec.Command("go", "build", "-ldflags", ldflags, "-o", bin, "./testdata/printinfo").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(out)), "v9.8.7 (commit 0123456789ab, 2026-11-23T09:00:00Z)"; got != want {
		t.Fatalf("%q, want %q", got, want)
	}
}
