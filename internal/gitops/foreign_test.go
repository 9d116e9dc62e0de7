package gitops

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// LocalWork finds the commits the remote lacks that astra did not write,
// whether the remote moved meanwhile or not, and tells astra's commits by
// the trailer; in a sealed repository the trailer alone is not enough.
func TestLocalWorkCommits(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		t.Run(map[bool]string{false: "trailer", true: "sealed"}[keyed], func(t *testing.T) {
			remote := newRemote(t)
			dir := cloneCLI(t, fileURL(remote), false)
			var mods []func(*Options)
			if keyed {
				mods = append(mods, sealed("k"))
			}
			r := open(t, dir, mods...)
			writeFile(t, dir, ledger, "line 1\n")
			if _, _, err := r.Commit("astra: run 1\n\n"+RunnerTrailer+": r1", ledger); err != nil {
				t.Fatal(err)
			}
			w, err := r.LocalWork(nil)
			if err != nil || !w.Empty() {
				t.Fatalf("astra's own commit: %+v, %v", w, err)
			}
			dev := foreign(t, dir, "notes", map[string]string{"notes.txt": "mine\n"})
			forged := foreign(t, dir, "looks like astra\n\n"+RunnerTrailer+": r2", map[string]string{"more.txt": "x\n"})
			want := []string{dev}
			if keyed {
				want = []string{forged, dev} // the trailer without a seal that verifies is not astra's mark
			}
			check := func(what string) {
				t.Helper()
				w, err := open(t, dir, mods...).LocalWork(nil)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, c := range w.Commits {
					got = append(got, c.Commit)
				}
				if strings.Join(got, " ") != strings.Join(want, " ") {
					t.Fatalf("%s: foreign commits %v, want %v", what, got, want)
				}
			}
			check("remote not moved")
			// The remote moves on and is fetched: the branch and the
			// tracking branch fork; the developer's commits are still found.
			other := cloneCLI(t, fileURL(remote), false)
			foreign(t, other, "elsewhere", map[string]string{"x.txt": "x\n"})
			gitCmd(t, other, "push", "-q", "origin", "main")
			gitCmd(t, dir, "fetch", "-q")
			check("remote moved")
		})
	}
}

// LocalWork lists configuration files that differ from the checked-out
// commit: edited, deleted and untracked, and nothing else.
func TestLocalWorkFiles(t *testing.T) {
	dir := cloneCLI(t, fileURL(newRemote(t)), false)
	writeFile(t, dir, "schedules/a.yaml", "id: b\n")
	writeFile(t, dir, "schedules/new.yaml", "id: n\n")
	writeFile(t, dir, "notes.txt", "not configuration\n")
	writeFile(t, dir, "schedules/README.md", "untracked, not read\n")
	if err := os.Remove(filepath.Join(dir, "policies/p.yaml")); err != nil {
		t.Fatal(err)
	}
	w, err := open(t, dir).LocalWork([]string{"schedules", "policies", ".astra.yaml", "tools/t.sh"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(w.Files, " "); got != "policies/p.yaml schedules/a.yaml schedules/new.yaml" || len(w.Commits) != 0 {
		t.Fatalf("local work %+v", w)
	}
}
