//go:build linux

package gitops

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// lockHolder finds a live process that is using the lock file lock (stat
// fi): one that has it open (git writes the new index through that
// descriptor), or else a git process working in the worktree (git closes
// the lock while hooks run, and renames it afterwards). It returns the pid
// and a description, or 0. Processes whose /proc entries this user may not
// read are not seen.
func lockHolder(lock string, fi os.FileInfo, worktree string) (int, string) {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, ""
	}
	if w, err := filepath.EvalSymlinks(worktree); err == nil {
		worktree = w // /proc shows resolved paths
	}
	gitPID := 0
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		dir := filepath.Join("/proc", p.Name())
		if holds(dir, filepath.Base(lock), fi) {
			return pid, ""
		}
		if gitPID == 0 && isGitIn(dir, worktree) {
			gitPID = pid
		}
	}
	if gitPID > 0 {
		return gitPID, ", a git process working in this checkout"
	}
	return 0, ""
}

// holds reports whether the process at /proc/<pid> has the file fi (named
// base) open.
func holds(dir, base string, fi os.FileInfo) bool {
	fds, err := os.ReadDir(filepath.Join(dir, "fd"))
	if err != nil {
		return false
	}
	for _, fd := range fds {
		p := filepath.Join(dir, "fd", fd.Name())
		target, err := os.Readlink(p)
		if err != nil || filepath.Base(target) != base {
			continue
		}
		if st, err := os.Stat(p); err == nil && os.SameFile(st, fi) {
			return true
		}
	}
	return false
}

// isGitIn reports whether the process at /proc/<pid> is git working in
// the worktree (its working directory is in it).
func isGitIn(dir, worktree string) bool {
	comm, err := os.ReadFile(filepath.Join(dir, "comm"))
	if err != nil || strings.TrimSpace(string(comm)) != "git" {
		return false
	}
	cwd, err := os.Readlink(filepath.Join(dir, "cwd"))
	if err != nil {
		return false
	}
	rel, err := filepath.Rel(worktree, cwd)
	return err == nil && filepath.IsLocal(rel)
}
