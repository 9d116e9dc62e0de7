package gitops

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// indexLock is .git/index.lock held by this process, as git holds it: the
// new index is written to the lock file, which is then renamed over the
// index. Whatever happens, release removes a lock that was not renamed.
type indexLock struct {
	f           *os.File
	lock, final string
	done        bool // renamed over the index, or released
}

// lockIndex takes the index lock. A lock file that is there already is
// someone else's: if it is provably stale (held by no live process and
// older than this run) it is removed, with a warning, and taken; otherwise
// the error wraps ErrLocked and says who holds it.
func (r *Repo) lockIndex() (*indexLock, error) {
	final := filepath.Join(r.gitDir, "index")
	lock := final + ".lock"
	for attempt := 0; ; attempt++ {
		f, err := os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			return &indexLock{f: f, lock: lock, final: final}, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("create %s: %w", lock, err)
		}
		if attempt > 0 { // removed as stale, and taken again by someone else
			return nil, fmt.Errorf("%w (%s was just taken by another process)", ErrLocked, r.relGit(lock))
		}
		if err := r.removeStaleLock(lock); err != nil {
			return nil, err
		}
	}
}

// removeStaleLock removes the lock file at lock if it is provably left
// behind by a process that is gone: no live process holds it (see
// lockHolder) and it is older than this run. A lock a killed run left
// would otherwise stop every later run in the checkout.
func (r *Repo) removeStaleLock(lock string) error {
	fi, err := os.Stat(lock)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // released meanwhile
	}
	if err != nil {
		return err
	}
	rel := r.relGit(lock)
	if pid, what := lockHolder(lock, fi, r.dir); pid > 0 {
		return fmt.Errorf("%w (%s held by pid %d%s)", ErrLocked, rel, pid, what)
	}
	if !fi.ModTime().Before(r.opts.Started) {
		return fmt.Errorf("%w (%s created after this run started)", ErrLocked, rel)
	}
	// Move it aside and check it is still the file judged stale, so that
	// two runs recovering at once never remove a lock one of them just took.
	aside := lock + ".stale-" + strconv.Itoa(os.Getpid())
	if err := os.Rename(lock, aside); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("remove stale %s: %w", rel, err)
	}
	if now, err := os.Stat(aside); err != nil || !os.SameFile(now, fi) || !now.ModTime().Equal(fi.ModTime()) {
		_ = os.Link(aside, lock) // put the new lock back, unless yet another one exists
		_ = os.Remove(aside)
		return fmt.Errorf("%w (%s was replaced while astra checked it)", ErrLocked, rel)
	}
	if err := os.Remove(aside); err != nil {
		return fmt.Errorf("remove stale %s: %w", rel, err)
	}
	r.warnings = append(r.warnings, fmt.Sprintf("removed a stale %s (last written %s, before this run started, and held by no process: left by a killed run or git command)",
		rel, fi.ModTime().UTC().Format(time.RFC3339)))
	return nil
}

// relGit names a file in the git dir as the user sees it (.git/index.lock).
func (r *Repo) relGit(p string) string {
	if rel, err := filepath.Rel(r.dir, p); err == nil && filepath.IsLocal(rel) {
		return filepath.ToSlash(rel)
	}
	return p
}

// commit writes data as the new index and renames it into place.
func (l *indexLock) commit(data []byte) error {
	if _, err := l.f.Write(data); err != nil {
		return err
	}
	if err := l.f.Close(); err != nil {
		return err
	}
	if err := os.Rename(l.lock, l.final); err != nil {
		return err
	}
	l.done = true
	return nil
}

// release gives up a lock that was not committed: astra never leaves a
// lock behind. Safe to call more than once, and after commit.
func (l *indexLock) release() {
	if l == nil || l.done {
		return
	}
	l.done = true
	_ = l.f.Close()
	_ = os.Remove(l.lock)
}

// Warnings are things astra recovered from that a person may want to
// know, such as a stale lock it removed; the caller records them.
func (r *Repo) Warnings() []string { return r.warnings }
