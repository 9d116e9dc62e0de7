package ledger

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/klauspost/compress/gzip"

	"github.com/astra-gitops/astra/internal/repofs"
)

// countingReader reports exactly how many bytes the gzip reader consumed:
// it implements io.ByteReader, so flate reads through it without its own
// read-ahead buffer and member boundaries are exact.
type countingReader struct {
	r *bufio.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countingReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}

// member is one gzip member of a file.
type member struct {
	start, end int64 // byte offsets in the file
	data       []byte
	err        error // decompression error; data holds what could be read
}

// members reads every gzip member of a file in order.
func members(root, rel string) ([]member, error) {
	f, err := openSegment(root, rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cr := &countingReader{r: bufio.NewReader(f)}
	var out []member
	var zr gzip.Reader
	for {
		start := cr.n
		if _, err := cr.r.Peek(1); errors.Is(err, io.EOF) {
			return out, nil
		}
		if err := zr.Reset(cr); err != nil {
			return append(out, member{start: start, end: cr.n, err: err}), nil
		}
		zr.Multistream(false)
		data, err := io.ReadAll(&zr)
		out = append(out, member{start: start, end: cr.n, data: data, err: err})
		if err != nil {
			return out, nil
		}
	}
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

// errNotTail means the ledger is broken somewhere other than its end: not
// what a killed run leaves behind, so astra will not cut it.
var errNotTail = errors.New("the ledger is broken before its last gzip member")

// Repair cuts a broken tail off the last segment: the last gzip member,
// when it does not decompress (a run killed while writing leaves a partial
// one). Complete lines of that member that still decode and chain are
// written back, so nothing valid is dropped. bad is the problem Scan
// reported. Anything else is refused with ErrNotTail: a bad line inside an
// intact member was written or edited by someone, and needs a human.
func (s *Store) Repair(segs []Segment, bad *CorruptError) (*Repaired, error) {
	if len(segs) == 0 || bad.File != segs[len(segs)-1].Path {
		return nil, fmt.Errorf("%w (%s)", errNotTail, bad)
	}
	seg := segs[len(segs)-1]
	ms, err := members(s.root, seg.Path)
	if err != nil {
		return nil, err
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("%w (%s)", errNotTail, bad)
	}
	// The bad line must lie in the last member.
	lines := 0
	for _, m := range ms[:len(ms)-1] {
		if m.err != nil {
			return nil, fmt.Errorf("%w (%s)", errNotTail, bad)
		}
		lines += bytes.Count(m.data, []byte{'\n'})
	}
	if bad.Line <= lines {
		return nil, fmt.Errorf("%w (%s)", errNotTail, bad)
	}
	last := ms[len(ms)-1]
	if last.err == nil {
		// The member decompresses and its CRC matches: these are the bytes
		// someone wrote, not a crash artifact. Cutting would drop valid lines.
		return nil, fmt.Errorf("%w (%s)", errNotTail, bad)
	}

	// Salvage the valid prefix of the member: complete lines that decode
	// and continue the chain from the line before the member.
	var prevHash string
	var prevSeq int64
	if lines > 0 {
		prevLine := lastLine(ms[len(ms)-2].data)
		prevHash = lineHash(prevLine)
		var e Event
		if err := Unmarshal(prevLine, &e); err != nil {
			return nil, err
		}
		prevSeq = e.Seq
	} else if len(segs) > 1 {
		t, err := Scan(s.root, segs[len(segs)-2:len(segs)-1], ScanOptions{}, func(*Event) error { return nil })
		if err != nil {
			return nil, err
		}
		prevHash, prevSeq = t.Hash, t.Seq
	}
	var keep []byte
	dec := newDecoder()
	rest := last.data
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
		keep = append(append(keep, line...), '\n')
		prevHash, prevSeq = lineHash(line), e.Seq
		salvaged++
		rest = rest[i+1:]
	}
	f, err := repofs.OpenFile(s.root, seg.Path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dropped := make([]byte, seg.Size-last.start)
	if _, err := f.ReadAt(dropped, last.start); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	sum := sha256.Sum256(dropped)
	if err := f.Truncate(last.start); err != nil {
		return nil, err
	}
	if len(keep) > 0 {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(keep)
		if err := zw.Close(); err != nil {
			return nil, err
		}
		if _, err := f.WriteAt(buf.Bytes(), last.start); err != nil {
			return nil, err
		}
	}
	if err := f.Sync(); err != nil {
		return nil, err
	}
	return &Repaired{File: seg.Path, Offset: last.start, Dropped: int64(len(dropped)), SHA256: hex.EncodeToString(sum[:]),
		Salvaged: salvaged, Problem: bad.Kind + ": " + bad.Msg}, nil
}

func lastLine(data []byte) []byte {
	data = bytes.TrimSuffix(data, []byte{'\n'})
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		return data[i+1:]
	}
	return data
}
