package repofs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const secret = "aws_secret_access_key=AKIAIOSFODNN7EXAMPLE"

// setup makes a repository next to a secret file outside it, with links of
// every kind a pull request could commit.
func setup(t *testing.T) (repo, outside string) {
	t.Helper()
	base := t.TempDir()
	repo, outside = filepath.Join(base, "repo"), filepath.Join(base, "outside")
	for _, d := range []string{repo + "/s/sub", outside} {
		must(t, os.MkdirAll(d, 0o755))
	}
	must(t, os.WriteFile(filepath.Join(outside, "cred"), []byte(secret), 0o600))
	must(t, os.WriteFile(filepath.Join(repo, "s/in.yaml"), []byte("name: a\n"), 0o644))
	links := map[string]string{
		"s/rel.yaml":    "in.yaml",
		"s/up.yaml":     "sub/../in.yaml",
		"s/absin.yaml":  filepath.Join(repo, "s/in.yaml"),
		"s/abs.yaml":    filepath.Join(outside, "cred"),
		"s/dotdot.yaml": "../../outside/cred",
		"s/zero.yaml":   "/dev/zero",
		"s/dangle.yaml": filepath.Join(outside, "gone"),
		"s/loop.yaml":   "loop.yaml",
		"s/dir.yaml":    "sub",
		"out":           outside,
		"s/linked":      "sub",
	}
	for name, target := range links {
		must(t, os.Symlink(target, filepath.Join(repo, name)))
	}
	return repo, outside
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestReadFile(t *testing.T) {
	repo, outside := setup(t)
	for _, c := range []struct {
		rel  string
		want error // nil: reads "name: a\n"
	}{
		{"s/in.yaml", nil},
		{"s/rel.yaml", nil},
		{"s/up.yaml", nil},
		{"s/absin.yaml", nil},
		{"s/linked/../in.yaml", nil},
		{"s/abs.yaml", ErrLink},
		{"s/dotdot.yaml", ErrLink},
		{"s/zero.yaml", ErrLink},
		{"out/cred", ErrLink},
		{"../outside/cred", ErrOutside},
		{"/etc/passwd", ErrOutside},
		{"s/dir.yaml", ErrNotRegular},
		{"s", ErrNotRegular},
		{"s/dangle.yaml", fs.ErrNotExist},
		{"s/missing.yaml", fs.ErrNotExist},
		{"s/loop.yaml", nil}, // any error: checked below
	} {
		data, err := ReadFile(repo, c.rel, 1<<20)
		switch {
		case c.rel == "s/loop.yaml":
			if err == nil {
				t.Errorf("%s: read a symlink loop", c.rel)
			}
		case c.want == nil:
			if err != nil || string(data) != "name: a\n" {
				t.Errorf("%s: %q %v", c.rel, data, err)
			}
		case !errors.Is(err, c.want):
			t.Errorf("%s: got %v, want %v", c.rel, err, c.want)
		}
		if err != nil {
			msg := err.Error()
			if strings.Contains(msg, outside) || strings.Contains(msg, "AKIA") || strings.Contains(msg, "/dev/zero") || strings.Contains(msg, repo) {
				t.Errorf("%s: the message names the target or its content: %s", c.rel, msg)
			}
		}
	}
}

func TestReadFileLimit(t *testing.T) {
	repo := t.TempDir()
	must(t, os.WriteFile(filepath.Join(repo, "big.yaml"), make([]byte, 101), 0o644))
	if _, err := ReadFile(repo, "big.yaml", 100); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "more than 100 bytes") {
		t.Fatalf("got %v", err)
	}
	if data, err := ReadFile(repo, "big.yaml", 101); err != nil || len(data) != 101 {
		t.Fatalf("got %d bytes, %v", len(data), err)
	}
}

func TestWriteInside(t *testing.T) {
	repo, outside := setup(t)
	f, err := OpenFile(repo, "var/schedules/2026-11.ndjson.gz", os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	must(t, err)
	f.Close()
	if _, err := os.Stat(filepath.Join(repo, "var/schedules/2026-11.ndjson.gz")); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"out/new.gz", "out/deeper/new.gz", "s/abs.yaml", "s/dangle.yaml"} {
		if f, err := OpenFile(repo, rel, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644); err == nil {
			f.Close()
			t.Errorf("%s: opened for writing", rel)
		}
	}
	if _, err := OpenFile(repo, "out/made/new.gz", os.O_WRONLY|os.O_CREATE, 0o644); !errors.Is(err, ErrLink) {
		t.Errorf("mkdir through a link out: %v", err)
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) != 1 {
		t.Errorf("something was written outside the repository: %v", entries)
	}
	b, _ := os.ReadFile(filepath.Join(outside, "cred"))
	if string(b) != secret {
		t.Error("the file outside changed")
	}
}

func TestReadDir(t *testing.T) {
	repo, _ := setup(t)
	if _, err := ReadDir(repo, "out"); !errors.Is(err, ErrLink) {
		t.Errorf("listed a directory outside: %v", err)
	}
	if _, err := ReadDir(repo, "nothing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
	if _, err := ReadDir(repo, "s/in.yaml"); !errors.Is(err, ErrNotDir) {
		t.Errorf("file: %v", err)
	}
	entries, err := ReadDir(repo, "s/linked")
	if err != nil || len(entries) != 0 {
		t.Errorf("a link to a directory inside: %v %v", entries, err)
	}
}

// TestTempFiles lists what WriteFile leaves when killed between writing
// and renaming, and nothing else.
func TestTempFiles(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{"var/state/snapshot.tmp", "var/state/snapshot", "var/schedules/2026-11.ndjson.gz", "var/x/deep.tmp", "top.tmp"} {
		full := filepath.Join(root, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(full), 0o755)
		os.WriteFile(full, nil, 0o644)
	}
	os.Symlink("snapshot", filepath.Join(root, "var", "state", "link.tmp"))
	got, err := TempFiles(root, "var")
	if err != nil || strings.Join(got, ",") != "var/state/snapshot.tmp,var/x/deep.tmp" {
		t.Fatalf("TempFiles = %v, %v", got, err)
	}
	if got, err := TempFiles(root, "missing"); err != nil || len(got) != 0 {
		t.Fatalf("a missing directory: %v, %v", got, err)
	}
}
