package gitops

import (
	"context"
	"encoding/base64"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testToken = "ghs_s3cretT0kenValue1234567890"

// httpClone makes a shallow clone whose origin is the token-protected smart
// HTTP server (cloned over file:// so the clone itself needs no credentials).
func httpClone(t *testing.T) (dir, remote string, srv *gitHTTPServer) {
	t.Helper()
	remote = newRemote(t)
	srv = newGitHTTPServer(t, filepath.Dir(remote), testToken)
	dir = cloneCLI(t, fileURL(remote), true)
	gitCmd(t, dir, "remote", "set-url", "origin", srv.URL+"/remote.git")
	return dir, remote, srv
}

func basicHeader(token string) string {
	return "AUTHORIZATION: basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+token))
}

// commitAndPush appends to the ledger, commits and pushes.
func commitAndPush(t *testing.T, r *Repo, dir string) error {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, ledger)); err != nil {
		writeFile(t, dir, ledger, "")
	}
	appendFile(t, dir, ledger, "event\n")
	if _, _, err := r.Commit("run", ledger); err != nil {
		t.Fatal(err)
	}
	return r.Push(context.Background())
}

func TestTokenAuth(t *testing.T) {
	t.Run("options-token", func(t *testing.T) {
		dir, remote, _ := httpClone(t)
		r := open(t, dir, func(o *Options) { o.Token = testToken })
		if err := commitAndPush(t, r, dir); err != nil {
			t.Fatal(err)
		}
		if gitCmd(t, remote, "rev-parse", "main") != gitCmd(t, dir, "rev-parse", "main") {
			t.Fatal("remote main not updated")
		}
		if err := r.Sync(context.Background()); err != nil {
			t.Fatalf("Sync over authenticated http: %v", err)
		}
	})

	t.Run("checkout-extraheader", func(t *testing.T) {
		// What actions/checkout (v4) writes into .git/config.
		dir, remote, srv := httpClone(t)
		u, _ := url.Parse(srv.URL)
		gitCmd(t, dir, "config", "http."+u.Scheme+"://"+u.Host+"/.extraheader", basicHeader(testToken))
		r := open(t, dir)
		if err := commitAndPush(t, r, dir); err != nil {
			t.Fatal(err)
		}
		if gitCmd(t, remote, "rev-parse", "main") != gitCmd(t, dir, "rev-parse", "main") {
			t.Fatal("remote main not updated")
		}
	})

	t.Run("checkout-v6-includeif", func(t *testing.T) {
		// actions/checkout v6 keeps the header in a separate file included
		// with includeIf "gitdir:<workspace>/.git".
		dir, _, srv := httpClone(t)
		u, _ := url.Parse(srv.URL)
		creds := filepath.Join(t.TempDir(), "git-credentials-1234.config")
		gitCmd(t, dir, "config", "--file", creds, "http."+u.Scheme+"://"+u.Host+"/.extraheader", basicHeader(testToken))
		gitCmd(t, dir, "config", "includeIf.gitdir:"+filepath.ToSlash(filepath.Join(dir, ".git"))+".path", creds)
		gitCmd(t, dir, "config", "includeIf.gitdir:/github/workspace/.git.path", "/github/runner_temp/git-credentials-1234.config")
		// The git CLI itself agrees the header applies.
		if out := gitCmd(t, dir, "config", "--get-urlmatch", "http.extraheader", srv.URL+"/remote.git"); !strings.Contains(out, "basic") {
			t.Fatalf("git does not see the header: %q", out)
		}
		r := open(t, dir)
		if err := commitAndPush(t, r, dir); err != nil {
			t.Fatal(err)
		}
	})

	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string, srv *gitHTTPServer) Options
	}{
		{"wrong-token", func(t *testing.T, dir string, srv *gitHTTPServer) Options {
			return Options{Dir: dir, Token: "ghs_wrongWrongWrong0987654321"}
		}},
		{"wrong-extraheader", func(t *testing.T, dir string, srv *gitHTTPServer) Options {
			u, _ := url.Parse(srv.URL)
			gitCmd(t, dir, "config", "http."+u.Scheme+"://"+u.Host+"/.extraheader", basicHeader("ghs_wrongWrongWrong0987654321"))
			return Options{Dir: dir}
		}},
		{"token-in-url", func(t *testing.T, dir string, srv *gitHTTPServer) Options {
			u, _ := url.Parse(srv.URL + "/remote.git")
			u.User = url.UserPassword("x-access-token", "ghs_wrongWrongWrong0987654321")
			gitCmd(t, dir, "remote", "set-url", "origin", u.String())
			return Options{Dir: dir}
		}},
		{"no-credentials", func(t *testing.T, dir string, srv *gitHTTPServer) Options {
			return Options{Dir: dir}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, _, srv := httpClone(t)
			r, err := Open(tc.setup(t, dir, srv))
			if err != nil {
				t.Fatal(err)
			}
			err = commitAndPush(t, r, dir)
			if !errors.Is(err, ErrAuth) {
				t.Fatalf("push = %v, want ErrAuth", err)
			}
			msg := err.Error()
			t.Log(msg)
			assertNoSecretInChain(t, err, "ghs_wrongWrongWrong0987654321")
			for _, secret := range []string{"ghs_wrongWrongWrong0987654321", testToken,
				base64.StdEncoding.EncodeToString([]byte("x-access-token:ghs_wrongWrongWrong0987654321"))} {
				if strings.Contains(msg, secret) {
					t.Fatalf("error leaks a credential: %s", msg)
				}
			}
			if !strings.Contains(msg, "GITHUB_TOKEN") || !strings.Contains(msg, srv.URL) {
				t.Fatalf("error %q does not say which remote and what to set", msg)
			}
			if err := r.Sync(context.Background()); !errors.Is(err, ErrAuth) || strings.Contains(err.Error(), "ghs_") {
				t.Fatalf("Sync = %v, want a redacted ErrAuth", err)
			}
		})
	}
}

// TestUnreachableRemoteRedacted: a network failure names the remote and
// what to check, and carries no credential even when the URL holds one.
func TestUnreachableRemoteRedacted(t *testing.T) {
	dir := cloneCLI(t, fileURL(newRemote(t)), true)
	gitCmd(t, dir, "remote", "set-url", "origin", "http://x-access-token:"+testToken+"@127.0.0.1:1/o/r.git")
	r := open(t, dir, func(o *Options) { o.Token = testToken })
	err := commitAndPush(t, r, dir)
	if err == nil || errors.Is(err, ErrAuth) || errors.Is(err, ErrRejected) {
		t.Fatalf("push to a closed port = %v", err)
	}
	t.Log(err)
	if strings.Contains(err.Error(), testToken) || !strings.Contains(err.Error(), "origin") || !strings.Contains(err.Error(), "network") {
		t.Fatalf("error %q leaks the token or does not say what to check", err)
	}
	assertNoSecretInChain(t, err, testToken)
}

// assertNoSecretInChain checks every error errors.Is/As can reach.
func assertNoSecretInChain(t *testing.T, err error, secret string) {
	t.Helper()
	if err == nil {
		return
	}
	if strings.Contains(err.Error(), secret) {
		t.Fatalf("error chain leaks a credential: %q", err)
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		assertNoSecretInChain(t, u.Unwrap(), secret)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			assertNoSecretInChain(t, e, secret)
		}
	}
}

func TestURLMatch(t *testing.T) {
	u, _ := url.Parse("https://github.com/o/r.git")
	for pattern, want := range map[string]bool{
		"https://github.com/":         true,
		"https://github.com":          true,
		"https://GitHub.com/o/":       true,
		"https://github.com/o/r.git":  true,
		"https://github.com/o/other/": false,
		"https://github.com/oo":       false,
		"http://github.com/":          false,
		"https://example.com/":        false,
	} {
		if _, got := urlMatch(pattern, u); got != want {
			t.Errorf("urlMatch(%q) = %v, want %v", pattern, got, want)
		}
	}
}

func TestGlobMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, name string
		want          bool
	}{
		{"/w/r/.git", "/w/r/.git", true},
		{"/w/r/.git/worktrees/*", "/w/r/.git/worktrees/x", true},
		{"/w/r/.git/worktrees/*", "/w/r/.git/worktrees/x/y", false},
		{"/w/**", "/w/r/.git", true},
		{"**/r/.git", "/w/r/.git", true},
		{"/w/r/.git", "/w/other/.git", false},
	} {
		if got := globMatch(tc.pattern, tc.name); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tc.pattern, tc.name, got, tc.want)
		}
	}
}
