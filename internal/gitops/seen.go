package gitops

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// seenName is the file in the git dir where a checkout that lives on
// remembers the newest sealed state it saw, outside the history a writer
// can rewrite.
const seenName = "astra/seen"

// Seen is the newest sealed commit a checkout saw, and the ledger's tail
// then (the file, seq and chain hash of its last line).
type Seen struct {
	Commit string
	File   string
	Seq    int64
	Hash   string
}

// ReadSeen reads .git/astra/seen; the zero Seen when the checkout has
// none (a fresh clone, as in CI). A file astra cannot read is an error.
func (r *Repo) ReadSeen() (Seen, error) {
	p := filepath.Join(r.gitDir, filepath.FromSlash(seenName))
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return Seen{}, nil
	}
	if err != nil {
		return Seen{}, err
	}
	var s Seen
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "commit" && plumbing.IsHash(f[1]):
			s.Commit = f[1]
		case len(f) == 4 && f[0] == "ledger":
			seq, err := strconv.ParseInt(f[2], 10, 64)
			if err != nil {
				return Seen{}, fmt.Errorf("%s: bad seq %q", r.relGit(p), f[2])
			}
			s.File, s.Seq, s.Hash = f[1], seq, f[3]
		default:
			return Seen{}, fmt.Errorf("%s: unreadable line %q: remove the file and run again to start over from the remote", r.relGit(p), line)
		}
	}
	return s, nil
}

// WriteSeen records s in .git/astra/seen, as git writes its files (lock
// and rename).
func (r *Repo) WriteSeen(s Seen) error {
	if !plumbing.IsHash(s.Commit) {
		return fmt.Errorf("write %s: %q is not a commit id", seenName, s.Commit)
	}
	data := "commit " + s.Commit + "\n"
	if s.File != "" {
		if strings.ContainsAny(s.File, " \t\n") || strings.ContainsAny(s.Hash, " \t\n") {
			return fmt.Errorf("write %s: a ledger file or hash with blanks", seenName)
		}
		data += fmt.Sprintf("ledger %s %d %s\n", s.File, s.Seq, s.Hash)
	}
	return r.writeLocked(filepath.Join(r.gitDir, filepath.FromSlash(seenName)), []byte(data), nil)
}

// Behind reports whether commit, the newest sealed commit of the remote's
// branch, is behind what this checkout saw: neither seen.Commit nor a
// commit whose first-parent history holds it. The history is deepened
// from the remote as NewestSealed deepens it. Nothing seen is never
// behind.
func (r *Repo) Behind(ctx context.Context, seen Seen, commit string) (bool, error) {
	if seen.Commit == "" || commit == seen.Commit {
		return false, nil
	}
	want := plumbing.NewHash(seen.Commit)
	h := plumbing.NewHash(commit)
	steps := deepenSteps
	for {
		if h == want {
			return false, nil
		}
		c, err := object.GetCommit(r.st, h)
		if err != nil {
			return false, fmt.Errorf("read commit %s: %w", h, err)
		}
		if len(c.ParentHashes) == 0 {
			return true, nil
		}
		if !r.hasObject(c.ParentHashes[0]) || r.isShallow(h) {
			if len(steps) == 0 || !r.HasRemote() {
				return false, fmt.Errorf("the history before %.12s is not in this clone, so astra cannot tell whether it follows %.12s, the newest sealed commit this checkout saw", h, want)
			}
			if err := r.deepen(ctx, steps[0]); err != nil {
				return false, err
			}
			steps = steps[1:]
			continue
		}
		h = c.ParentHashes[0]
	}
}
