//go:build linux

package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// peakRSSBound is the documented bound (README, "Limits") on the peak
// memory of `astra validate` and `astra run-due --dry-run`, whatever the
// repository holds.
const peakRSSBound = 256 << 20

// TestPeakRSS runs astra as a real process over every case of the loader's
// fuzz corpus and over generated worst cases, and reads each process's peak
// resident memory from the kernel. validate, and run-due --dry-run a month
// after a first recorded run, stay under peakRSSBound.
func TestPeakRSS(t *testing.T) {
	bin, err := exec.LookPath("astra")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("../config/testdata/fuzz/FuzzLoad/*")
	if err != nil || len(files) < 20 {
		t.Fatalf("fuzz corpus: %v %v", files, err)
	}
	var worst struct {
		sync.Mutex
		validate, dryRun int64
		vName, dName     string
	}
	t.Cleanup(func() {
		t.Logf("worst peak RSS: validate %.1f MB (%s), run-due --dry-run %.1f MB (%s); bound %.0f MB",
			mb(worst.validate), worst.vName, mb(worst.dryRun), worst.dName, mb(peakRSSBound))
	})
	for _, c := range append(corpusCases(t, files), worstCases()...) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			repo := c.setup(t)
			v, code := peakRSS(t, bin, repo, "validate")
			if code == 0 {
				gitCommitAll(t, repo)
				if _, code := peakRSS(t, bin, repo, "run-due", "--no-push", "--now", "2026-10-01T00:00:00Z", "--test-clock"); code != 0 {
					t.Fatalf("first run exited %d", code)
				}
			}
			d, dcode := peakRSS(t, bin, repo, "run-due", "--dry-run", "--now", "2026-11-01T00:00:00Z")
			if (code == 0) != (dcode == 0) {
				t.Fatalf("validate exited %d, run-due --dry-run %d", code, dcode)
			}
			t.Logf("peak RSS: validate %.1f MB, run-due --dry-run %.1f MB", mb(v), mb(d))
			worst.Lock()
			defer worst.Unlock()
			if v > worst.validate {
				worst.validate, worst.vName = v, c.name
			}
			if d > worst.dryRun {
				worst.dryRun, worst.dName = d, c.name
			}
		})
	}
}

type boundsCase struct {
	name  string
	setup func(t *testing.T) string // returns the repository
}

// peakRSS runs astra in repo with a bare environment and returns its peak
// resident memory and exit status (0 or 2; a crash fails the test).
func peakRSS(t *testing.T, bin, repo string, args ...string) (int64, int) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--repo", repo}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TMPDIR=" + os.TempDir(), "GIT_CONFIG_NOSYSTEM=1"}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = nil, &stderr
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	code := cmd.ProcessState.ExitCode()
	if (code != 0 && code != 2) || strings.Contains(stderr.String(), "goroutine ") {
		t.Fatalf("astra %s exited %d:\n%.2000s", strings.Join(args, " "), code, stderr.String())
	}
	rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // KiB on Linux
	if rss > peakRSSBound {
		t.Errorf("astra %s: peak RSS %.1f MB, over the bound of %.0f MB", strings.Join(args, " "), mb(rss), mb(peakRSSBound))
	}
	return rss, code
}

func mb(n int64) float64 { return float64(n) / (1 << 20) }

// corpusCases lays out each fuzz corpus entry as FuzzLoad does: the
// schedule bytes as schedules/s.yaml (or behind a link), the policies bytes
// as policies/p.yaml.
func corpusCases(t *testing.T, files []string) []boundsCase {
	var out []boundsCase
	for _, file := range files {
		sched, pol, link := readCorpus(t, file)
		out = append(out, boundsCase{name: filepath.Base(file), setup: func(t *testing.T) string {
			root, outside := t.TempDir(), t.TempDir()
			writeFile(t, filepath.Join(root, "policies/p.yaml"), pol)
			s := filepath.Join(root, "schedules/s.yaml")
			mustMkdir(t, filepath.Dir(s))
			switch link % 5 { // the link kinds of FuzzLoad
			case 0:
				writeFile(t, s, sched)
			case 1:
				writeFile(t, filepath.Join(outside, "s.yaml"), sched)
				mustDo(t, os.Symlink(filepath.Join(outside, "s.yaml"), s))
			case 2:
				mustDo(t, os.Symlink("/dev/zero", s))
			case 3:
				writeFile(t, filepath.Join(outside, "s.yaml"), sched)
				mustDo(t, os.Remove(filepath.Dir(s)))
				mustDo(t, os.Symlink(outside, filepath.Dir(s)))
			case 4:
				mustDo(t, syscall.Mkfifo(s, 0o644))
			}
			return root
		}})
	}
	return out
}

// readCorpus decodes a "go test fuzz v1" file of FuzzLoad's arguments.
func readCorpus(t *testing.T, file string) (sched, pol []byte, link byte) {
	data, err := os.ReadFile(file)
	mustDo(t, err)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 4 || lines[0] != "go test fuzz v1" {
		t.Fatalf("%s: not a FuzzLoad corpus entry", file)
	}
	arg := func(line, prefix string) string {
		s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(line, prefix), ")"))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		return s
	}
	return []byte(arg(lines[1], "[]byte(")), []byte(arg(lines[2], "[]byte(")), arg(lines[3], "byte(")[0]
}

// worstCases are too large for the corpus: the heaviest configurations that
// validate, and the largest ones refused.
func worstCases() []boundsCase {
	schedules := func(n int, format string) func(t *testing.T) string {
		return func(t *testing.T) string {
			var b strings.Builder
			for i := range n {
				fmt.Fprintf(&b, format, i)
			}
			return repoWith(t, b.String())
		}
	}
	fixed := func(s string) func(t *testing.T) string {
		return func(t *testing.T) string { return repoWith(t, s) }
	}
	return []boundsCase{
		{"5000 schedules every minute, catch-up all 100 over 31 days",
			schedules(5000, "- {name: s%d, cron: '@every 1m', target_tool: noop, catchup: {policy: all, max: 100, window: 31d}}\n")},
		{"1000 every-minute crons in Europe/Berlin, catch-up all",
			schedules(1000, "- {name: s%d, cron: '* * * * *', timezone: Europe/Berlin, target_tool: noop, catchup: {policy: all, max: 100, window: 31d}}\n")},
		{"5001 schedules", schedules(5001, "- {name: s%d, cron: '@daily', target_tool: noop}\n")},
		{"a 5 MB line", fixed("name: a\ndescription: " + strings.Repeat("x", 5<<20) + "\n")},
		{"1 MiB of empty schedules", fixed(strings.Repeat("- {}\n", (1<<20)/5-1))},
		{"100000-deep nesting", fixed("name: a\npayload: " + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + "\n")},
	}
}

const boundsPolicies = `tools:
  noop: {kind: exec, command: [echo, ok], tier: read_only}
actors:
  - {actor: astra, scopes: ["*"]}
`

func repoWith(t *testing.T, schedules string) string {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "policies/p.yaml"), []byte(boundsPolicies))
	writeFile(t, filepath.Join(root, "schedules/s.yaml"), []byte(schedules))
	return root
}

func gitCommitAll(t *testing.T, repo string) {
	for _, argv := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "init"},
	} {
		cmd := exec.Command("git", argv...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", argv, err, out)
		}
	}
}

func writeFile(t *testing.T, p string, data []byte) {
	mustMkdir(t, filepath.Dir(p))
	mustDo(t, os.WriteFile(p, data, 0o644))
}

func mustMkdir(t *testing.T, dir string) { mustDo(t, os.MkdirAll(dir, 0o755)) }

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
