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
	"runtime"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/astra-gitops/astra/internal/repofs"
)

// Problem kinds a reader reports.
const (
	ProblemTruncated = "truncated" // the file ends inside a gzip member
	ProblemGzip      = "gzip"      // a gzip member is corrupt
	ProblemJSON      = "json"      // a line is not a valid event
	ProblemSeq       = "seq"       // seq does not increase by one
	ProblemChain     = "chain"     // prev is not the hash of the previous line
	ProblemAnchor    = "anchor"    // a line differs from what a commit anchored
	ProblemResume    = "resume"    // the line a scan resumes after is not the one it was given
)

// CorruptError points at the first bad line of a ledger.
type CorruptError struct {
	File   string // slash path relative to the repository root
	Line   int    // 1-based line within the file (decompressed)
	Kind   string // one of the Problem kinds
	Msg    string
	Commit string // ProblemAnchor: the commit whose anchor the file no longer matches

	torn bool // see Repairable
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("%s:%d: ledger %s error: %s", e.File, e.Line, e.Kind, e.Msg)
}

// Repairable reports whether the damage is a torn tail: the newest file
// ends inside its last gzip member, every member before it is intact and
// nothing intact follows. That is what a run killed while appending
// leaves, and the only damage Repair cuts; anything else is restored from
// git (see Restore).
func (e *CorruptError) Repairable() bool { return e.torn }

// ScanOptions tune a scan.
type ScanOptions struct {
	// Verify checks the hash chain line by line (sha256 of every line).
	// Without it, only the last line of each file is hashed, for the tail.
	Verify bool
	// After is the tail the first scanned segment continues from; when set
	// (Seq > 0) the first event must follow it.
	After Tail
	// VerifyLast checks the hash chain of the last N files only: the one
	// a run appends to must be sound, older ones are `ledger verify`'s job.
	VerifyLast int
	// Workers decoding files in parallel (default GOMAXPROCS).
	Workers int
	// SkipOutput leaves Event.Output empty, for callers that never read it.
	SkipOutput bool
	// Resume continues after a known line (a state snapshot's chain head):
	// the line with seq Resume.Seq must be in the first segment and hash
	// to Resume.Hash, and only the events after it reach fn.
	Resume Tail
}

const (
	batchSize = 512
	// aheadBatches bounds how far a file's decoder runs ahead of the
	// consumer: about 40 MB, more than a default 4 MiB segment holds, so
	// the workers never wait for each other on default settings.
	aheadBatches = 256
)

// batches recycles event slices between decoders and the consumer. It
// holds pointers so that a Put stores no new slice header.
var batches = sync.Pool{New: func() any { s := make([]Event, 0, batchSize); return &s }}

type batch struct {
	events []Event
	buf    *[]Event // the pooled slice events came from
	err    error
}

func newBatch() batch {
	p := batches.Get().(*[]Event)
	return batch{events: (*p)[:0], buf: p}
}

// recycle returns b's slice to the pool; b must not be used after.
func (b batch) recycle() {
	if b.buf != nil {
		*b.buf = b.events[:0]
		batches.Put(b.buf)
	}
}

// segmentResult is what a worker learned about its file.
type segmentResult struct {
	firstSeq  int64
	firstPrev string
	lastSeq   int64
	lastHash  string
	lastTS    int64 // unix seconds
	lines     int
	resumed   bool // the line to resume after was found
}

// Scan decodes segs in order and calls fn for every event, in ledger order.
// Files are decompressed and decoded in parallel, a few ahead of fn, with
// bounded memory; fn runs on the calling goroutine and must not keep e.
// Scan stops at the first problem and returns a *CorruptError; every event
// before it has been passed to fn. Callers pass segments up to the newest
// file: a problem in the last one is checked for being a torn tail (see
// CorruptError.Repairable).
func Scan(root string, segs []Segment, opts ScanOptions, fn func(e *Event) error) (Tail, error) {
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	type job struct {
		seg    Segment
		out    chan batch
		result segmentResult
	}
	jobs := make([]*job, len(segs))
	for i, sg := range segs {
		jobs[i] = &job{seg: sg, out: make(chan batch, aheadBatches)}
	}
	// A file may be read ahead only while fewer than workers+1 files are
	// not yet consumed: that bounds memory to a few files' batches.
	slots := make(chan struct{}, workers+1)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	go func() {
		for i, j := range jobs {
			select {
			case slots <- struct{}{}:
			case <-stop:
				return
			}
			verify := opts.Verify || i >= len(jobs)-opts.VerifyLast
			var resume Tail
			if i == 0 {
				resume = opts.Resume
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				readSegment(root, j.seg, verify, opts.SkipOutput, resume, j.out, &j.result, stop)
			}()
		}
	}()
	defer func() {
		close(stop)
		wg.Wait()
	}()

	tail := opts.After
	for _, j := range jobs {
		first := true
		line := 0
		for b := range j.out {
			for i := range b.events {
				e := &b.events[i]
				line++
				if first {
					first = false
					if tail.Seq > 0 || tail.Hash != "" {
						if e.Seq != tail.Seq+1 {
							return tail, &CorruptError{File: j.seg.Path, Line: line, Kind: ProblemSeq,
								Msg: fmt.Sprintf("seq %d does not follow %d at the end of the previous file", e.Seq, tail.Seq)}
						}
						if j.result.firstPrev != tail.Hash {
							return tail, &CorruptError{File: j.seg.Path, Line: line, Kind: ProblemChain,
								Msg: "prev is not the hash of the last line of the previous file"}
						}
					}
				}
				if e.Seq > opts.Resume.Seq {
					if err := fn(e); err != nil {
						return tail, err
					}
				}
				tail.Seq = e.Seq
			}
			if b.err != nil {
				if ce, ok := b.err.(*CorruptError); ok && j == jobs[len(jobs)-1] {
					ce.torn = ce.Kind == ProblemTruncated && tornFile(root, j.seg.Path)
				}
				return tail, b.err
			}
			b.recycle()
		}
		<-slots
		if j == jobs[0] && opts.Resume.Seq > 0 && !j.result.resumed {
			return tail, &CorruptError{File: j.seg.Path, Line: j.result.lines, Kind: ProblemResume,
				Msg: fmt.Sprintf("seq %d is not in this file", opts.Resume.Seq)}
		}
		if j.result.lines > 0 {
			tail.Seq, tail.Hash = j.result.lastSeq, j.result.lastHash
			tail.TS = time.Unix(j.result.lastTS, 0).UTC()
		}
		tail.Segment = j.seg
	}
	return tail, nil
}

// readSegment decodes one file into batches on out, then closes out. res is
// written before out is closed. The line with seq resume.Seq (if any) must
// hash to resume.Hash.
func readSegment(root string, seg Segment, verify, skipOutput bool, resume Tail, out chan<- batch, res *segmentResult, stop <-chan struct{}) {
	defer close(out)
	send := func(b batch) bool {
		select {
		case out <- b:
			return true
		case <-stop:
			return false
		}
	}
	fail := func(b batch, line int, kind, format string, args ...any) {
		b.err = &CorruptError{File: seg.Path, Line: line, Kind: kind, Msg: fmt.Sprintf(format, args...)}
		send(b)
	}
	f, err := openSegment(root, seg.Path)
	if err != nil {
		send(batch{err: err})
		return
	}
	defer f.Close()
	zr, err := gzip.NewReader(bufio.NewReaderSize(f, 256<<10))
	if err != nil {
		fail(batch{}, 1, gzipKind(err), "%v", err)
		return
	}
	br := bufio.NewReaderSize(zr, 256<<10)
	dec := newDecoder()
	dec.SkipOutput = skipOutput
	var (
		b        = newBatch()
		long     []byte // a line longer than the buffer
		prevHash [sha256.Size]byte
		last     []byte
		lineNo   int
		hexBuf   [2 * sha256.Size]byte
	)
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(long)+len(chunk) > MaxLine {
				fail(b, lineNo+1, ProblemJSON, "line longer than %d bytes", MaxLine)
				return
			}
			long = append(long, chunk...)
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			fail(b, lineNo+1, gzipKind(err), "%v", err)
			return
		}
		if len(chunk) == 0 && len(long) == 0 {
			break
		}
		line := chunk
		if long != nil {
			line = append(long, chunk...)
			long = nil
		}
		lineNo++
		if line[len(line)-1] != '\n' {
			fail(b, lineNo, ProblemTruncated, "the last line has no newline: the file was cut short")
			return
		}
		line = line[:len(line)-1]
		b.events = append(b.events, Event{})
		e := &b.events[len(b.events)-1]
		prev, derr := dec.Decode(line, e)
		if derr != nil {
			b.events = b.events[:len(b.events)-1]
			fail(b, lineNo, ProblemJSON, "%v", derr)
			return
		}
		if lineNo == 1 {
			res.firstSeq, res.firstPrev = e.Seq, string(prev)
		} else if e.Seq != res.lastSeq+1 {
			b.events = b.events[:len(b.events)-1]
			fail(b, lineNo, ProblemSeq, "seq %d does not follow %d", e.Seq, res.lastSeq)
			return
		}
		if verify {
			if lineNo > 1 {
				hex.Encode(hexBuf[:], prevHash[:])
				if !bytes.Equal(prev, hexBuf[:]) {
					b.events = b.events[:len(b.events)-1]
					fail(b, lineNo, ProblemChain, "prev is not the hash of line %d: a line was edited, removed or inserted", lineNo-1)
					return
				}
			}
			prevHash = sha256.Sum256(line)
		} else {
			last = append(last[:0], line...)
		}
		if resume.Seq > 0 && e.Seq == resume.Seq {
			h := prevHash
			if !verify {
				h = sha256.Sum256(line)
			}
			if hex.EncodeToString(h[:]) != resume.Hash {
				b.events = b.events[:len(b.events)-1]
				fail(b, lineNo, ProblemResume, "seq %d is not the line the scan resumes after: its hash differs", e.Seq)
				return
			}
			res.resumed = true
		}
		res.lastSeq, res.lastTS = e.Seq, e.TS.Unix()
		if len(b.events) == batchSize {
			if !send(b) {
				return
			}
			b = newBatch()
		}
		if errors.Is(err, io.EOF) {
			break
		}
	}
	res.lines = lineNo
	if verify {
		res.lastHash = hex.EncodeToString(prevHash[:])
	} else if lineNo > 0 {
		res.lastHash = lineHash(last)
	}
	if len(b.events) > 0 {
		send(b)
	}
}

func gzipKind(err error) string {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return ProblemTruncated
	}
	return ProblemGzip
}

// openSegment opens a ledger file of the repository at root, which must be
// a regular file inside it (a pull request may commit a symlink in var/).
// Without a root, rel is a path as given.
func openSegment(root, rel string) (*os.File, error) {
	if root == "" {
		return os.Open(rel)
	}
	return repofs.Open(root, rel)
}

// ReadAll returns every event of segs in order; for small logs and tests.
func ReadAll(root string, segs []Segment) ([]Event, Tail, error) {
	var out []Event
	tail, err := Scan(root, segs, ScanOptions{Verify: true}, func(e *Event) error {
		out = append(out, *e)
		return nil
	})
	return out, tail, err
}

// First returns the first event of a file, reading only as much as that
// takes; nil for an empty file.
func First(root string, seg Segment) (*Event, error) {
	f, err := openSegment(root, seg.Path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(bufio.NewReader(f))
	if errors.Is(err, io.EOF) {
		return nil, nil
	}
	if err != nil {
		return nil, &CorruptError{File: seg.Path, Line: 1, Kind: gzipKind(err), Msg: err.Error()}
	}
	line, err := readLine(bufio.NewReaderSize(zr, 64<<10))
	if len(line) == 0 && errors.Is(err, io.EOF) {
		return nil, nil
	}
	if err != nil {
		return nil, &CorruptError{File: seg.Path, Line: 1, Kind: gzipKind(err), Msg: err.Error()}
	}
	var e Event
	if err := Unmarshal(line[:len(line)-1], &e); err != nil {
		return nil, &CorruptError{File: seg.Path, Line: 1, Kind: ProblemJSON, Msg: err.Error()}
	}
	return &e, nil
}

// readLine reads up to and including '\n', refusing lines past MaxLine.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > MaxLine {
			return nil, fmt.Errorf("line longer than %d bytes", MaxLine)
		}
		line = append(line, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}
