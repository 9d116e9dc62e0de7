//go:build !linux && !darwin && !freebsd && !netbsd

package gitops

import (
	"os"

	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// fillStat has no portable stat fields here; git then re-hashes the file
// once to confirm it is clean.
func fillStat(e *index.Entry, fi os.FileInfo) {
	e.CreatedAt = fi.ModTime()
}
