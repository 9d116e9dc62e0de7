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
	ProblemSeal      = "seal"      // a sealed ledger's seal does not verify, or a member lacks one
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
	// Ahead bounds how many batches of 512 events a file's decoder runs
	// ahead of fn (default about 40 MB of events). A caller reading
	// several files at once with scans of its own sets it low.
	Ahead int
	// SkipOutput leaves Event.Output empty, for callers that never read it.
	SkipOutput bool
	// Resume continues after a known line (a state snapshot's chain head):
	// the line with seq Resume.Seq must be in the first segment and hash
	// to Resume.Hash, and only the events after it reach fn. In a sealed
	// scan the caller vouches for it as for a seal (a sealed snapshot's
	// head).
	Resume Tail
	// Until stops the scan after the line with this seq (0: at the end);
	// no later event reaches fn, and the tail returned is not one to
	// append to. In a sealed scan it is a line a seal covers (the
	// UnsealedError's Sealed): events still held back there are dropped.
	Until int64
	// Seals makes the scan sealed (see UnsealedError): events of members
	// after the last seal are held back from fn, and the newest seal is
	// checked once, when the scan ends, since it covers every line before
	// it through the chain (set Verify too). Events a seal covers are
	// passed on when its member ends. A newest seal made with a key that
	// is not listed is a *CorruptError of kind ProblemSeal.
	Seals *Seals
	// EverySeal is `ledger verify`'s rule for a sealed scan instead:
	// from the first sealed member on, every member must be sealed and
	// its seal must verify; the first that is not is a *CorruptError of
	// kind ProblemSeal. Nothing is held back.
	EverySeal bool
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
	marks  []mark   // a sealed scan's member boundaries among events
	err    error
}

// mark is where a gzip member starts or ends, before events[at] of its
// batch.
type mark struct {
	at    int
	start bool
	off   int64  // the member's first byte (start) or the byte after it (end)
	line  int    // start: the first line that can end in it; end: the last that did
	seal  []byte // start: its seal
	seq   int64  // end: seq of the file's last line so far
	hash  string // end: chain hash of that line
	ts    int64  // end: its ts
	check error  // end, EverySeal: Check's verdict on its seal
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
	lastSeal  []byte
	lines     int
	resumed   bool // the line to resume after was found
}

// segOpts is what the worker reading one file needs of ScanOptions.
type segOpts struct {
	verify, skipOutput bool
	resume             Tail
	seals              *Seals // a sealed scan: mark members
	every              bool
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
	ahead := opts.Ahead
	if ahead <= 0 {
		ahead = aheadBatches
	}
	for i, sg := range segs {
		jobs[i] = &job{seg: sg, out: make(chan batch, ahead)}
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
			so := segOpts{verify: opts.Verify || i >= len(jobs)-opts.VerifyLast, skipOutput: opts.SkipOutput,
				seals: opts.Seals, every: opts.EverySeal}
			if i == 0 {
				so.resume = opts.Resume
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				readSegment(root, j.seg, so, j.out, &j.result, stop)
			}()
		}
	}()
	defer func() {
		close(stop)
		wg.Wait()
	}()

	tail := opts.After
	var ss *sealScan
	if opts.Seals != nil {
		ss = &sealScan{seals: opts.Seals, every: opts.EverySeal, fn: fn}
		if opts.Resume.Seq > 0 {
			ss.resume, ss.vouched = opts.Resume.Seq, true
		}
	}
	pass := fn
	if ss != nil {
		pass = ss.event
	}
	for _, j := range jobs {
		first := true
		line := 0
		for b := range j.out {
			m := 0
			for i := range b.events {
				for ; m < len(b.marks) && b.marks[m].at == i; m++ {
					if err := ss.mark(j.seg, &b.marks[m]); err != nil {
						return tail, err
					}
				}
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
				if opts.Until > 0 && e.Seq > opts.Until {
					return tail, nil
				}
				if e.Seq > opts.Resume.Seq {
					if err := pass(e); err != nil {
						return tail, err
					}
				}
				tail.Seq = e.Seq
			}
			for ; m < len(b.marks); m++ {
				if err := ss.mark(j.seg, &b.marks[m]); err != nil {
					return tail, err
				}
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
			tail.TS = unixUTC(j.result.lastTS)
			tail.Seal = string(j.result.lastSeal)
		}
		tail.Segment = j.seg
	}
	if ss != nil {
		return ss.finish(tail)
	}
	return tail, nil
}

func unixUTC(sec int64) time.Time { return time.Unix(sec, 0).UTC() }

// countReader counts the bytes read through it: with what a bufio.Reader
// above it still buffers, where the reader is in the file.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// readSegment decodes one file into batches on out, then closes out. res is
// written before out is closed. The line with seq o.resume.Seq (if any)
// must hash to o.resume.Hash. The file's gzip members are read one by one
// (their headers hold seals); a line may run on from one member into the
// next, as a multistream reader would read it.
func readSegment(root string, seg Segment, o segOpts, out chan<- batch, res *segmentResult, stop <-chan struct{}) {
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
	file := &countReader{r: f}
	src := bufio.NewReaderSize(file, 256<<10)
	var zr gzip.Reader
	if err := zr.Reset(src); err != nil {
		fail(batch{}, 1, gzipKind(err), "%v", err)
		return
	}
	zr.Multistream(false)
	br := bufio.NewReaderSize(&zr, 256<<10)
	dec := newDecoder()
	dec.SkipOutput = o.skipOutput
	verify, resume := o.verify, o.resume
	var (
		b        = newBatch()
		long     []byte // a line longer than the buffer, or run on from the last member
		prevHash [sha256.Size]byte
		last     []byte
		lineNo   int
		hexBuf   [2 * sha256.Size]byte
		seal     = sealOf(zr.Header.Extra) // of the member being read
		lines    int                       // lines that ended in it
	)
	// lastHash is the chain hash of the file's last line so far.
	lastHash := func() string {
		switch {
		case lineNo == 0:
			return ""
		case verify:
			return hex.EncodeToString(prevHash[:])
		}
		return lineHash(last)
	}
	if o.seals != nil {
		b.marks = append(b.marks, mark{start: true, line: 1, seal: seal})
	}
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
		if errors.Is(err, io.EOF) {
			// The member ends; a line it does not finish runs on into the
			// next one.
			if len(long)+len(chunk) > MaxLine {
				fail(b, lineNo+1, ProblemJSON, "line longer than %d bytes", MaxLine)
				return
			}
			long = append(long, chunk...)
			end := file.n - int64(src.Buffered())
			if lines > 0 {
				res.lastSeal = seal
			}
			if o.seals != nil {
				m := mark{at: len(b.events), off: end, line: lineNo, seq: res.lastSeq, hash: lastHash(), ts: res.lastTS}
				if o.every && len(seal) > 0 {
					m.check = o.seals.Check(seg.Path, m.hash, seal)
				}
				b.marks = append(b.marks, m)
			}
			next := zr.Reset(src)
			if errors.Is(next, io.EOF) {
				if len(long) > 0 {
					fail(b, lineNo+1, ProblemTruncated, "the last line has no newline: the file was cut short")
					return
				}
				break
			}
			if next != nil {
				fail(b, lineNo+1, gzipKind(next), "%v", next)
				return
			}
			zr.Multistream(false)
			br.Reset(&zr)
			seal, lines = sealOf(zr.Header.Extra), 0
			if o.seals != nil {
				b.marks = append(b.marks, mark{at: len(b.events), start: true, off: end, line: lineNo + 1, seal: seal})
			}
			continue
		}
		if err != nil {
			fail(b, lineNo+1, gzipKind(err), "%v", err)
			return
		}
		line := chunk
		if long != nil {
			line = append(long, chunk...)
			long = nil
		}
		lineNo++
		lines++
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
	}
	res.lines = lineNo
	if lineNo > 0 {
		res.lastHash = lastHash()
	}
	if len(b.events) > 0 || len(b.marks) > 0 {
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
