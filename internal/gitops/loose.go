package gitops

import (
	"os"
	"path/filepath"
)

// Loose is an estimate of a repository's loose objects, made as `git gc
// --auto` makes it: one object directory (objects/17) sampled, times 256.
type Loose struct {
	Objects int
	Bytes   int64
}

// Loose objects past either bound call for git's packing. Each run stores
// the ledger file it appended to in full (up to ledger.segment_size), so a
// checkout that lives on (a persistent runner) reaches them within days;
// a fresh clone per run never does. LooseObjectLimit is git's own gc.auto.
const (
	LooseObjectLimit = 6700
	LooseByteLimit   = 1 << 30
)

// Loose estimates the loose objects of the repository.
func (r *Repo) Loose() Loose {
	entries, err := os.ReadDir(filepath.Join(r.commonDir, "objects", "17"))
	if err != nil {
		return Loose{}
	}
	var l Loose
	for _, e := range entries {
		if len(e.Name()) != 38 { // a temporary file, not an object
			continue
		}
		if fi, err := e.Info(); err == nil {
			l.Objects += 256
			l.Bytes += 256 * fi.Size()
		}
	}
	return l
}

// TooLoose reports whether l is past git's bounds.
func (l Loose) TooLoose() bool { return l.Objects > LooseObjectLimit || l.Bytes > LooseByteLimit }
