package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/klauspost/compress/gzip"
)

// stats summarises a verified ledger.
type stats struct {
	Files  int
	Events int64
	Tail   Tail
}

// Verify checks every segment: gzip integrity, one valid event per line,
// seq increasing by one, and the hash chain across all files. The error is
// a *CorruptError naming the first bad file:line. A chain break is pinned
// to the edited line where the lines around it allow: when only the link
// into line L is broken, line L-1 was changed; when the link out of L is
// broken too, L itself was.
//
// With seals (at most one; for a sealed ledger), from the first sealed
// gzip member of the log on, every member must be sealed by a listed key:
// the first that is not is a *CorruptError of kind ProblemSeal naming the
// member's first line.
func Verify(root string, segs []Segment, seals ...*Seals) (stats, error) {
	return VerifyEach(root, segs, nil, seals...)
}

// VerifyEach is Verify passing every event to fn as well (when not nil;
// its Output left empty), in order, for a caller that would otherwise
// read the ledger a second time.
func VerifyEach(root string, segs []Segment, fn func(e *Event), seals ...*Seals) (stats, error) {
	st := stats{Files: len(segs)}
	// Output is still checked, not kept; a few batches ahead keep memory low.
	opts := ScanOptions{Verify: true, SkipOutput: true, Ahead: 16}
	if len(seals) > 0 && seals[0] != nil {
		opts.Seals, opts.EverySeal = seals[0], true
	}
	tail, err := Scan(root, segs, opts, func(e *Event) error {
		st.Events++
		if fn != nil {
			fn(e)
		}
		return nil
	})
	st.Tail = tail
	var ce *CorruptError
	if errors.As(err, &ce) && ce.Kind == ProblemChain {
		return st, pinChainBreak(root, segs, ce)
	}
	return st, err
}

func pinChainBreak(root string, segs []Segment, ce *CorruptError) error {
	lines, err := fileLines(root, ce.File)
	if err != nil || ce.Line > len(lines) {
		return ce
	}
	at := ce.Line - 1 // 0-based index of the line whose prev is wrong
	if at == 0 {
		ce.Msg = "prev does not match the last line of the previous file: that line, or this line's prev, was changed"
		return ce
	}
	if at+1 < len(lines) {
		var next Event
		if Unmarshal(lines[at+1], &next) == nil && next.Prev != lineHash(lines[at]) {
			ce.Msg = "this line was changed: neither its prev nor its own hash match its neighbours"
			return ce
		}
	}
	return &CorruptError{File: ce.File, Line: ce.Line - 1, Kind: ProblemChain,
		Msg: fmt.Sprintf("this line was changed: its hash no longer matches the prev of line %d", ce.Line)}
}

// maxInflated bounds what one file or gzip member may inflate to when
// astra reads it whole (diagnosis, repair): far above what astra writes
// (segments roll at ledger.segment_size compressed; a member is one run's
// events), so that only a gzip bomb reaches it.
const maxInflated = 512 << 20

// inflate reads r to the end, refusing more than max bytes.
func inflate(r io.Reader, max int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err == nil && int64(len(data)) > max {
		err = fmt.Errorf("inflates to more than %d bytes", max)
	}
	return data, err
}

// fileLines decompresses a whole file into lines (without newlines).
func fileLines(root, rel string) ([][]byte, error) {
	f, err := openSegment(root, rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	data, err := inflate(zr, maxInflated)
	if err != nil {
		return nil, err
	}
	return bytes.Split(bytes.TrimSuffix(data, []byte{'\n'}), []byte{'\n'}), nil
}

// Cat writes the decompressed lines of the given files to w, as NDJSON
// (for `astra ledger cat` and git's textconv diff driver). It does not
// check the chain, so it also shows broken files.
func Cat(w io.Writer, files ...string) error {
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			return err
		}
		zr, err := gzip.NewReader(f)
		if err == nil {
			_, err = io.Copy(w, zr)
		}
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
	}
	return nil
}
