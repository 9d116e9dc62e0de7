package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/klauspost/compress/gzip"
)

// member is one gzip member of a file, or a damaged stretch of it.
type member struct {
	start, end int64  // byte offsets in the file
	data       []byte // decompressed; for a damaged member, what could be read
	err        error  // nil for an intact member (it decompresses, CRC and size match)
}

var gzipMagic = []byte{0x1f, 0x8b, 8} // ID1, ID2, CM=deflate

// members splits a file into its gzip members. A damaged member does not
// end the scan: it extends to the next offset where an intact member
// starts, or to the end of the file, so the caller can tell a torn tail
// from damage followed by intact history.
func members(data []byte) []member {
	var zr gzip.Reader
	var out []member
	for off := int64(0); off < int64(len(data)); {
		m := readMember(&zr, data, off)
		if m.err == nil {
			out = append(out, m)
			off = m.end
			continue
		}
		m.end = int64(len(data))
		var next *member
		for i := off + 1; i < int64(len(data)); i++ {
			k := bytes.Index(data[i:], gzipMagic)
			if k < 0 {
				break
			}
			i += int64(k)
			if c := readMember(&zr, data, i); c.err == nil {
				m.end, next = i, &c
				break
			}
		}
		out = append(out, m)
		if next == nil {
			break
		}
		out = append(out, *next)
		off = next.end
	}
	return out
}

// readMember decompresses the gzip member starting at off. bytes.Reader is
// an io.ByteReader, so flate reads exactly the member and end is exact.
func readMember(zr *gzip.Reader, data []byte, off int64) member {
	br := bytes.NewReader(data[off:])
	m := member{start: off}
	if m.err = zr.Reset(br); m.err == nil {
		zr.Multistream(false)
		m.data, m.err = inflate(zr, maxInflated)
	}
	m.end = int64(len(data)) - int64(br.Len())
	return m
}

// tornMember returns the index of a torn last member: the file ends
// inside it (cut short, as a killed append leaves it) and every member
// before it is intact. It returns -1 for any other shape.
func tornMember(ms []member) int {
	n := len(ms)
	if n == 0 || !errors.Is(ms[n-1].err, io.ErrUnexpectedEOF) {
		return -1
	}
	for _, m := range ms[:n-1] {
		if m.err != nil {
			return -1
		}
	}
	return n - 1
}

// tornFile reports whether a ledger file ends in a torn member (see
// tornMember).
func tornFile(root, rel string) bool {
	f, err := openSegment(root, rel)
	if err != nil {
		return false
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	return err == nil && tornMember(members(data)) >= 0
}

// Repaired describes what Repair did, for the ledger.repaired event.
type Repaired struct {
	File     string `json:"file"`
	Offset   int64  `json:"offset"`   // where the file was cut
	Dropped  int64  `json:"dropped"`  // bytes removed
	SHA256   string `json:"sha256"`   // of the removed bytes
	Salvaged int    `json:"salvaged"` // complete, chained lines kept from the cut member
	Problem  string `json:"problem"`
}

// RepairOptions say what git already holds of the newest ledger file.
// Those bytes are history: Repair never cuts them, whatever they look like.
type RepairOptions struct {
	Committed int64 // length of the file in the branch tip (0: not committed)
	Pushed    int64 // length of the file on the remote branch (0: not pushed)
}

// ErrNotRepairable is wrapped by every refusal of Repair; the error says
// how to restore the file from git instead.
var ErrNotRepairable = errors.New("astra will not cut it")

// Repair cuts a torn tail off the newest ledger file: its last gzip member,
// when the file ends inside it (a run killed while appending leaves a
// partial member). Complete lines of that member that still decode and
// chain are written back, so nothing valid is dropped, except in a sealed
// ledger, where they would be a member without a seal (the complete,
// sealed members before it stay as they are, and nothing is sealed
// again); a file left with nothing is removed rather than left empty. bad
// is the first problem Verify or Scan reported for segs.
//
// Anything else is refused with an error wrapping ErrNotRepairable and
// saying how to restore the file from git: damage in an older file or
// inside an intact member (someone's edit), damage followed by intact
// members (a flipped byte, not a crash), and a cut below what opts says
// git already has. A refused Repair leaves the file untouched.
//
// opts is optional (at most one) so that callers without git pass none.
func (s *Store) Repair(segs []Segment, bad *CorruptError, opts ...RepairOptions) (*Repaired, error) {
	var o RepairOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	if len(segs) == 0 || bad.File != segs[len(segs)-1].Path || !bad.Repairable() {
		return nil, notTorn(bad)
	}
	seg := segs[len(segs)-1]
	file := s.abs(seg.Path)
	f, err := openSegment(s.root, seg.Path) // a regular file inside the repository
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	ms := members(data)
	k := tornMember(ms)
	if k < 0 { // the file changed since bad was found
		return nil, notTorn(bad)
	}
	last := ms[k]
	switch {
	case last.start < o.Pushed:
		return nil, fmt.Errorf("%s: these events were already pushed (the remote branch has %d bytes of this file, the damage starts at byte %d), so %w; restore the file with `git checkout -- %s`",
			bad, o.Pushed, last.start, ErrNotRepairable, seg.Path)
	case last.start < o.Committed:
		return nil, fmt.Errorf("%s: these events were already committed (the branch has %d bytes of this file, the damage starts at byte %d), so %w; restore the file with `git checkout -- %s`",
			bad, o.Committed, last.start, ErrNotRepairable, seg.Path)
	}

	prevHash, prevSeq, err := s.chainBefore(segs, ms, k)
	if err != nil {
		return nil, err
	}
	var keep []byte
	salvaged := 0
	if s.seals == nil {
		// A member of a sealed ledger is kept with its seal or not at
		// all: lines written back would be a member no seal covers, and
		// astra never seals anything again.
		keep, salvaged = salvage(last.data, prevHash, prevSeq)
	}
	out := data[:last.start:last.start]
	if len(keep) > 0 {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(keep)
		if err := zw.Close(); err != nil {
			return nil, err
		}
		out = append(out, buf.Bytes()...)
	}
	if len(out) == 0 {
		err = os.Remove(file) // an empty file is not a valid segment
	} else {
		err = replaceFile(file, out, !s.noSync)
	}
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data[last.start:])
	return &Repaired{File: seg.Path, Offset: last.start, Dropped: int64(len(data)) - last.start, SHA256: hex.EncodeToString(sum[:]),
		Salvaged: salvaged, Problem: bad.Kind + ": " + bad.Msg}, nil
}

// chainBefore is the hash and seq of the line before member k of the
// newest segment's members ms: the last line of the member before it, or
// of the segment before; none for the ledger's first line.
func (s *Store) chainBefore(segs []Segment, ms []member, k int) (string, int64, error) {
	if k > 0 {
		prevLine := lastLine(ms[k-1].data)
		var e Event
		if err := Unmarshal(prevLine, &e); err != nil {
			return "", 0, err
		}
		return lineHash(prevLine), e.Seq, nil
	}
	if len(segs) > 1 {
		t, err := Scan(s.root, segs[len(segs)-2:len(segs)-1], ScanOptions{}, func(*Event) error { return nil })
		if err != nil {
			return "", 0, err
		}
		return t.Hash, t.Seq, nil
	}
	return "", 0, nil
}

// salvage is the valid prefix of a torn member's lines: complete lines
// that decode and continue the chain from prevHash and prevSeq, and how
// many they are.
func salvage(data []byte, prevHash string, prevSeq int64) ([]byte, int) {
	var keep []byte
	dec := newDecoder()
	rest := data
	salvaged := 0
	for {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break
		}
		line := rest[:i]
		var e Event
		prev, err := dec.Decode(line, &e)
		if err != nil || string(prev) != prevHash || (prevSeq > 0 && e.Seq != prevSeq+1) {
			break
		}
		if e.Event == LedgerCheckpoint {
			// A month's checkpoint may span several lines of this member
			// (continued parts): kept whole or not at all, never cut
			// short into a state that silently lacks the rest.
			return nil, 0
		}
		keep = append(append(keep, line...), '\n')
		prevHash, prevSeq = lineHash(line), e.Seq
		salvaged++
		rest = rest[i+1:]
	}
	return keep, salvaged
}

func notTorn(bad *CorruptError) error {
	return fmt.Errorf("%s: this is not a torn tail (the end of the newest file, cut short by a run killed while writing), so %w; %s",
		bad, ErrNotRepairable, bad.Restore())
}

// Restore says how to put the damaged file back from git.
func (e *CorruptError) Restore() string {
	return fmt.Sprintf("restore the file from git: `git checkout -- %s` if the damage is not committed (`git status` lists the file as modified), "+
		"otherwise find the last good version with `git log -p -- %s` and restore it with `git checkout <good commit> -- %s`", e.File, e.File, e.File)
}

// replaceFile writes data to file through a temporary file and a rename,
// so a crash during a repair leaves the old file or the new one.
func replaceFile(file string, data []byte, sync bool) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(file), ".astra-repair-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	if sync {
		if err = tmp.Sync(); err != nil {
			return err
		}
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}

func lastLine(data []byte) []byte {
	data = bytes.TrimSuffix(data, []byte{'\n'})
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		return data[i+1:]
	}
	return data
}
