package gitops

import (
	"fmt"
	"os"
	"path/filepath"
)

// Loose is how many loose objects a repository holds, and their bytes.
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

// Loose estimates the loose objects of the repository from one sampled
// directory, and counts them all when the sample says they are past git's
// bounds: one large blob in the sample would otherwise pass for a gigabyte.
func (r *Repo) Loose() Loose {
	l := r.looseIn("17")
	if est := (Loose{Objects: l.Objects * 256, Bytes: l.Bytes * 256}); !est.TooLoose() {
		return est
	}
	var all Loose
	for i := range 256 {
		d := r.looseIn(fmt.Sprintf("%02x", i))
		all.Objects, all.Bytes = all.Objects+d.Objects, all.Bytes+d.Bytes
	}
	return all
}

// looseIn counts the loose objects in one object directory.
func (r *Repo) looseIn(dir string) Loose {
	entries, err := os.ReadDir(filepath.Join(r.commonDir, "objects", dir))
	if err != nil {
		return Loose{}
	}
	var l Loose
	for _, e := range entries {
		if len(e.Name()) != 38 { // a temporary file, not an object
			continue
		}
		if fi, err := e.Info(); err == nil {
			l.Objects++
			l.Bytes += fi.Size()
		}
	}
	return l
}

// TooLoose reports whether l is past git's bounds.
func (l Loose) TooLoose() bool { return l.Objects > LooseObjectLimit || l.Bytes > LooseByteLimit }
