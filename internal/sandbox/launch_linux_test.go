package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// probe tries one thing in the tool's view and says whether it worked.
const probe = `t() { if eval "$2" >/dev/null 2>&1; then echo "ok $1"; else echo "no $1"; fi; }
t read-config 'cat .git/config'
t read-key 'cat .git/astra/key'
t read-head 'cat .git/HEAD'
t read-src 'cat src/app.txt'
t write-src 'echo x >> src/app.txt'
t write-readme 'echo x >> README'
t mv-src 'mv src/app.txt src/moved.txt && mv src/moved.txt src/app.txt'
t write-ledger 'echo x >> var/ledger'
t new-schedule 'echo x > schedules/evil.yaml'
t write-tool 'echo x >> tools/deploy.sh'
t new-top 'echo x > newtop'
t write-git 'echo x > .git/hooks-x'
t link-ledger 'ln var/ledger src/ledger'
t write-home 'echo x > "$HOME/f" && cat "$HOME/f"'
t write-outside 'echo x > ../outside/f'
t dev-null 'echo x > /dev/null'
t own-proc 'grep -q "^NoNewPrivs:.1" /proc/self/status'
t parent-environ 'cat /proc/$PPID/environ'
t signal-parent 'kill -0 $PPID'
t ruleset-fd 'test -e /proc/self/fd/3'
`

// TestView runs a shell in the view of a tier-0 and a tier-1 tool, and
// checks what it could do.
func TestView(t *testing.T) {
	abi, ok := Available()
	if !ok {
		t.Skip("no Landlock here")
	}
	base, _ := filepath.EvalSymlinks(t.TempDir())
	repo, home := filepath.Join(base, "repo"), filepath.Join(base, "home")
	write(t, base, map[string]string{"repo/.git/config": "[http] extraheader = AUTHORIZATION: basic c2VjcmV0", "repo/.git/astra/key": "key",
		"repo/.git/HEAD": "ref: refs/heads/main", "repo/var/ledger": "", "repo/schedules/s.yaml": "", "repo/tools/deploy.sh": "",
		"repo/src/app.txt": "", "repo/README": "", "home/.keep": "", "outside/.keep": ""})
	t.Setenv("PARENT_SECRET", "hunter2")
	protected := []string{"var", "schedules", "tools/deploy.sh"}
	for _, tc := range []struct {
		name  string
		write bool
		ok    []string
	}{
		{"tier 0", false, []string{"read-head", "read-src", "write-home", "dev-null", "own-proc"}},
		{"tier 1", true, []string{"read-head", "read-src", "write-src", "write-readme", "mv-src", "write-home", "dev-null", "own-proc"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Policy{Repo: repo, WriteRepo: tc.write, Protected: protected, Writable: []string{home}}
			cmd, started, err := Command("/bin/sh", []string{"sh", "-c", probe}, []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}, p, t.TempDir(), os.Getenv)
			if err != nil {
				t.Fatal(err)
			}
			defer started()
			cmd.Dir = repo
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				verdict, what, _ := strings.Cut(line, " ")
				want := "no"
				if slices.Contains(tc.ok, what) || what == "signal-parent" && abi < 6 {
					want = "ok"
				}
				if verdict != want {
					t.Errorf("%s: %s, want %s", what, verdict, want)
				}
			}
		})
	}
}

// BenchmarkStart is what starting a tool costs: a direct exec, through the
// launcher (astra run again: no_new_privs, capabilities, subreaper), and
// through the launcher into a Landlock view of a repository (computing the
// view included).
func BenchmarkStart(b *testing.B) {
	base, _ := filepath.EvalSymlinks(b.TempDir())
	files := map[string]string{"repo/.git/config": "", "repo/.git/HEAD": "", "repo/var/ledger": "", "repo/schedules/s.yaml": "", "repo/README": "", "home/.keep": ""}
	for i := range 50 {
		files[fmt.Sprintf("repo/src/f%d", i)] = ""
	}
	write(b, base, files)
	repo := filepath.Join(base, "repo")
	run := func(b *testing.B, p *Policy) {
		dir := b.TempDir()
		for b.Loop() {
			cmd, started, err := Command("/bin/true", []string{"true"}, nil, p, dir, os.Getenv)
			if err != nil {
				b.Fatal(err)
			}
			err = cmd.Run()
			started()
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("launcher", func(b *testing.B) { run(b, nil) })
	if _, ok := Available(); !ok {
		b.Skip("no Landlock here")
	}
	b.Run("landlock", func(b *testing.B) {
		run(b, &Policy{Repo: repo, WriteRepo: true, Protected: []string{"var", "schedules"}, Writable: []string{filepath.Join(base, "home")}})
	})
}
