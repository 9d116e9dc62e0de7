package gitops

import (
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/gittest"
	git "github.com/go-git/go-git/v5"
)

// Tests run real git (the CLI and go-git) against real repositories in
// t.TempDir; nothing is mocked.

func gitEnv() []string { return gittest.Env() }

func gitCmd(t testing.TB, dir string, args ...string) string {
	t.Helper()
	return gittest.Must(t, dir, args...)
}

func gitRun(dir string, args ...string) (string, error) { return gittest.Run(dir, args...) }

func writeFile(t testing.TB, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	// An mtime in the past makes the index entry non-racy, so `git diff-files`
	// trusts the stat data astra wrote instead of re-reading the file.
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
}

func appendFile(t testing.TB, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, rel, string(b)+content)
}

func readFile(t testing.TB, dir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// newRemote makes a bare repository (go-git PlainInit) seeded with two
// commits on main, so that depth-1 clones of it are really shallow.
func newRemote(t testing.TB) string {
	t.Helper()
	root := t.TempDir()
	remote := filepath.Join(root, "remote.git")
	if _, err := git.PlainInit(remote, true); err != nil {
		t.Fatal(err)
	}
	gitCmd(t, remote, "symbolic-ref", "HEAD", "refs/heads/main")
	gitCmd(t, remote, "config", "http.receivepack", "true")
	seed := filepath.Join(root, "seed")
	gitCmd(t, root, "init", "-q", "-b", "main", seed)
	writeFile(t, seed, "README.md", "# project\n")
	writeFile(t, seed, "schedules/a.yaml", "id: a\n")
	gitCmd(t, seed, "add", "-A")
	gitCmd(t, seed, "commit", "-q", "-m", "seed 1")
	writeFile(t, seed, "policies/p.yaml", "tools: []\n")
	gitCmd(t, seed, "add", "-A")
	gitCmd(t, seed, "commit", "-q", "-m", "seed 2")
	gitCmd(t, seed, "push", "-q", remote, "main")
	return remote
}

func fileURL(path string) string { return "file://" + filepath.ToSlash(path) }

// cloneCLI clones with the git CLI; depth 1 over file:// makes a real
// shallow clone, as actions/checkout does.
func cloneCLI(t testing.TB, url string, shallow bool) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "clone")
	args := []string{"clone", "-q"}
	if shallow {
		args = append(args, "--depth", "1")
	}
	gitCmd(t, ".", append(args, url, dir)...)
	if shallow && gitCmd(t, dir, "rev-parse", "--is-shallow-repository") != "true" {
		t.Fatal("clone is not shallow")
	}
	return dir
}

func cloneGoGit(t testing.TB, url string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "clone")
	if _, err := git.PlainClone(dir, false, &git.CloneOptions{URL: url}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func open(t testing.TB, dir string, mod ...func(*Options)) *Repo {
	t.Helper()
	opts := Options{Dir: dir, Now: func() time.Time { return time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC) }}
	for _, m := range mod {
		m(&opts)
	}
	r, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// assertClean checks that the checkout has no changes per the git CLI, first
// without refreshing the index (so the stat data astra wrote must be right),
// then with `git status`.
func assertClean(t testing.TB, dir string) {
	t.Helper()
	if out := gitCmd(t, dir, "diff-files", "--name-only"); out != "" {
		t.Errorf("git diff-files in %s reports (stale index stat data?):\n%s", dir, out)
	}
	if out := gitCmd(t, dir, "status", "--porcelain", "--untracked-files=all"); out != "" {
		t.Errorf("git status in %s is not clean:\n%s", dir, out)
	}
}

// assertLinear checks that ref's history on the remote has no merges and
// that the remote repository is intact.
func assertRemoteOK(t testing.TB, remote, ref string) {
	t.Helper()
	for _, line := range strings.Split(gitCmd(t, remote, "rev-list", "--parents", ref), "\n") {
		if len(strings.Fields(line)) > 2 {
			t.Errorf("merge commit in %s: %s", ref, line)
		}
	}
	gitCmd(t, remote, "fsck", "--strict", "--no-progress")
}

// gitHTTPServer serves the bare repositories under root over git smart HTTP
// (git http-backend as a CGI), optionally requiring basic auth
// x-access-token:<token>, and counts the bytes clients send to
// git-receive-pack (what a push costs on the wire).
type gitHTTPServer struct {
	*httptest.Server
	pushed atomic.Int64
	posts  atomic.Int64
	// fault, when set, decides what becomes of each request (fault*).
	fault atomic.Pointer[func(*http.Request) fault]
}

// fault is what the server does with a request instead of answering it.
type fault int

const (
	pass      fault = iota
	fail500         // answer 500
	reset           // close the connection without an answer
	hang            // never answer (until the client gives up)
	lostReply       // do the work, then close the connection: the answer is lost
)

func (s *gitHTTPServer) setFault(f func(*http.Request) fault) { s.fault.Store(&f) }

func newGitHTTPServer(t testing.TB, root, token string) *gitHTTPServer {
	t.Helper()
	gitExe, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	s := &gitHTTPServer{}
	backend := &cgi.Handler{
		Path: gitExe,
		Args: []string{"http-backend"},
		Env: []string{
			"GIT_PROJECT_ROOT=" + root,
			"GIT_HTTP_EXPORT_ALL=1",
			"GIT_CONFIG_NOSYSTEM=1",
			"GIT_CONFIG_GLOBAL=" + os.DevNull,
		},
	}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if token != "" {
			user, pass, ok := req.BasicAuth()
			if !ok || user != "x-access-token" || pass != token {
				w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
				http.Error(w, "bad credentials", http.StatusUnauthorized)
				return
			}
		}
		if strings.HasSuffix(req.URL.Path, "/git-receive-pack") {
			s.posts.Add(1)
			req.Body = &countingReader{r: req.Body, n: &s.pushed}
		}
		f := pass
		if fn := s.fault.Load(); fn != nil {
			f = (*fn)(req)
		}
		switch f {
		case fail500:
			http.Error(w, "boom", http.StatusInternalServerError)
		case reset:
			closeConn(w)
		case hang:
			<-req.Context().Done()
		case lostReply:
			backend.ServeHTTP(httptest.NewRecorder(), req)
			closeConn(w)
		default:
			backend.ServeHTTP(w, req)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// closeConn drops the connection under w without a response.
func closeConn(w http.ResponseWriter) {
	if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
		_ = c.Close()
	}
}

type countingReader struct {
	r io.ReadCloser
	n *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func (c *countingReader) Close() error { return c.r.Close() }
