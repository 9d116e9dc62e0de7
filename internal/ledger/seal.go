package ledger

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/repofs"
)

// A sealed ledger (policies list trust.ledger_keys) carries a seal in the
// gzip header of every member astra appends: a signature by the ledger
// key over the file and the chain hash of the member's last line. The
// hash chain links every line to the one before it, so a seal that
// verifies covers every line up to the line it names, in every file
// before it too, as long as the chain is verified over those lines. A
// sealed ledger is therefore authentic up to its last valid seal, and
// what follows it is what someone without the key appended.
//
// This package knows where seals are and what they bind; how they are
// made and checked is package ledgerkey's (the Seals hooks), so the
// ledger knows no key and no signature format.

// Seals are the hooks of a sealed ledger. A Store without them (nil) is
// not sealed, and reads and writes as it always did.
type Seals struct {
	// Sign seals a member of file (slash path) whose last line has the
	// chain hash hash. Nil when this process does not hold the ledger
	// key: a sealed ledger is then read, never appended to.
	Sign func(file, hash string) ([]byte, error)
	// Check verifies a member's seal. Its error wraps ErrUnknownKey when
	// the seal was made with a key the policies do not list.
	Check func(file, hash string, seal []byte) error
	// SignSnapshot and CheckSnapshot seal the state snapshot (package
	// state), which is the ledger folded and needs the same key. Sign is
	// nil when Sign is.
	SignSnapshot  func(data []byte) ([]byte, error)
	CheckSnapshot func(data, seal []byte) error
}

// ErrUnknownKey is wrapped by a Check error for a seal made with a key
// that is not listed: not damage to cut, but a key the policies no
// longer (or never) listed.
var ErrUnknownKey = errors.New("the seal was made with a key that trust.ledger_keys does not list")

// ErrNoKey is wrapped by an append to a sealed ledger by a process that
// does not hold the ledger key.
var ErrNoKey = errors.New("this ledger is sealed (policies list trust.ledger_keys) and astra does not hold the ledger key, so it records nothing")

// Sealed makes s a sealed ledger with seals (nil: not sealed); it returns
// s. The side logs a Journal keeps next to it are sealed alike.
func (s *Store) Sealed(seals *Seals) *Store { s.seals = seals; return s }

// Seals are the store's seal hooks; nil for a ledger that is not sealed.
func (s *Store) Seals() *Seals { return s.seals }

// The seal is an RFC 1952 extra subfield with this ID, in the header of
// the member it seals.
const sealSI1, sealSI2 = 'A', 'S'

// sealExtra is a gzip header's extra field holding seal.
func sealExtra(seal []byte) ([]byte, error) {
	if len(seal) > 0xffff-4 {
		return nil, fmt.Errorf("a seal of %d bytes does not fit a gzip header", len(seal))
	}
	b := make([]byte, 4+len(seal))
	b[0], b[1] = sealSI1, sealSI2
	binary.LittleEndian.PutUint16(b[2:4], uint16(len(seal)))
	copy(b[4:], seal)
	return b, nil
}

// sealOf is the seal in a gzip header's extra field; nil when there is
// none (or the field is malformed: then the member is not sealed).
func sealOf(extra []byte) []byte {
	for len(extra) >= 4 {
		n := int(binary.LittleEndian.Uint16(extra[2:4]))
		if 4+n > len(extra) {
			return nil
		}
		if extra[0] == sealSI1 && extra[1] == sealSI2 {
			return extra[4 : 4+n]
		}
		extra = extra[4+n:]
	}
	return nil
}

// sealLines is the extra field sealing a member that holds lines in file.
func (s *Store) sealLines(file string, lines []byte) (seal, extra []byte, err error) {
	if s.seals.Sign == nil {
		return nil, nil, fmt.Errorf("%s: %w", file, ErrNoKey)
	}
	seal, err = s.seals.Sign(file, lineHash(lastLine(lines)))
	if err != nil {
		return nil, nil, fmt.Errorf("sealing %s: %w", file, err)
	}
	extra, err = sealExtra(seal)
	return seal, extra, err
}

// UnsealedError: a sealed ledger has bytes after its last valid seal,
// which astra did not write (or did not finish writing under its key): a
// writer's or a tool's append, or a member whose seal does not verify.
// Their lines were not passed on (unless Applied), and the scan's tail is
// Sealed, the last line a valid seal covers. Move the bytes away (see
// Quarantine) and read again. It is an error of kind errkind.ErrLedger.
type UnsealedError struct {
	Files  []UnsealedFile // per file, in ledger order
	Sealed Tail           // the last line a valid seal covers (empty: none)
	Reason string         // why the first member after it does not count
	// Applied: lines after Sealed were passed on before the newest seal,
	// which is checked last, was found not to verify. The caller reads
	// again up to Sealed (ScanOptions.Until).
	Applied bool
}

// UnsealedFile is what follows the sealed part of one file.
type UnsealedFile struct {
	File    string // slash path relative to the repository root
	Offset  int64  // the byte where the sealed part of the file ends (0: none of it is sealed)
	Seq     int64  // the seq of the file's last line before Offset (0: none)
	Bytes   int64  // bytes after Offset
	Members int    // gzip members after Offset
	Lines   int    // lines after Offset
	First   int64  // seq of the first line after Offset (0: none)
}

func (e *UnsealedError) Error() string {
	var b strings.Builder
	for i, f := range e.Files {
		if i > 0 {
			b.WriteString("; ")
		}
		if f.Offset == 0 {
			fmt.Fprintf(&b, "%s: no part of the file is sealed", f.File)
		} else {
			fmt.Fprintf(&b, "%s: sealed up to byte %d (seq %d)", f.File, f.Offset, f.Seq)
		}
		fmt.Fprintf(&b, ", then %d bytes in %d gzip members (%d lines", f.Bytes, f.Members, f.Lines)
		if f.First > 0 {
			fmt.Fprintf(&b, " from seq %d", f.First)
		}
		b.WriteString(") that no valid seal covers")
	}
	if e.Reason != "" {
		fmt.Fprintf(&b, " (%s)", e.Reason)
	}
	return b.String()
}

// Unwrap makes the error one of kind errkind.ErrLedger.
func (e *UnsealedError) Unwrap() error { return errkind.ErrLedger }

// member records one gzip member of a sealed scan.
type memberRec struct {
	seg                 Segment
	start, end          int64 // byte offsets in the file
	firstLine, lastLine int   // lines that end in it; lastLine < firstLine when none does
	firstSeq, lastSeq   int64 // of its lines (0: none)
	hash                string
	ts                  int64
	seal                []byte
	check               error // EverySeal: what Check said
}

// sealScan is the consumer's side of a sealed scan: it holds back the
// events of members that no seal covers yet, and finds the last valid
// seal once the scan ends.
type sealScan struct {
	seals   *Seals
	every   bool
	resume  int64 // a resume point the caller vouches for (a sealed snapshot's head)
	fn      func(*Event) error
	vouched bool // a seal, or the resume point, precedes: unsealed members are held
	hold    bool // the current member's events are held
	held    []Event
	passed  int64 // seq of the last event passed to fn
	members []memberRec
	cur     memberRec
	sealed  bool // EverySeal: a sealed member was seen
}

// event passes e on, or holds it while no seal covers it.
func (ss *sealScan) event(e *Event) error {
	if ss.cur.firstSeq == 0 {
		ss.cur.firstSeq = e.Seq
	}
	if ss.hold {
		ss.held = append(ss.held, *e)
		return nil
	}
	ss.passed = e.Seq
	return ss.fn(e)
}

// mark handles a member's start or end.
func (ss *sealScan) mark(seg Segment, m *mark) error {
	if m.start {
		ss.cur = memberRec{seg: seg, start: m.off, firstLine: m.line, seal: m.seal}
		ss.hold = !ss.every && ss.vouched && (len(m.seal) == 0 || len(ss.held) > 0)
		return nil
	}
	c := &ss.cur
	c.end, c.lastLine, c.lastSeq, c.hash, c.ts, c.check = m.off, m.line, m.seq, m.hash, m.ts, m.check
	ss.members = append(ss.members, *c)
	if ss.every {
		return ss.strict(c)
	}
	if len(c.seal) == 0 {
		return nil
	}
	// Sealed: it covers what was held before it (checked at the end).
	ss.vouched, ss.hold = true, false
	for i := range ss.held {
		ss.passed = ss.held[i].Seq
		if err := ss.fn(&ss.held[i]); err != nil {
			return err
		}
	}
	ss.held = ss.held[:0]
	return nil
}

// strict is `ledger verify`'s rule: from the first sealed member of the
// log on, every member is sealed by a listed key.
func (ss *sealScan) strict(c *memberRec) error {
	if len(c.seal) == 0 && !ss.sealed {
		return nil
	}
	ss.sealed = true
	var msg string
	switch {
	case len(c.seal) == 0:
		msg = "this gzip member is not sealed, but members before it are: astra did not write it (or not with the ledger key)"
	case c.check != nil:
		msg = "the seal of this gzip member does not verify: " + c.check.Error()
	default:
		return nil
	}
	return &CorruptError{File: c.seg.Path, Line: max(c.firstLine, 1), Kind: ProblemSeal,
		Msg: fmt.Sprintf("%s (bytes %d to %d)", msg, c.start, c.end)}
}

// finish checks the newest seal and says what no valid seal covers.
// tail is the scan's tail when everything is covered.
func (ss *sealScan) finish(tail Tail) (Tail, error) {
	if ss.every {
		tail.Seal = ss.lastSeal(len(ss.members))
		return tail, nil
	}
	k := ss.lastSealed(len(ss.members))
	auth := ss.resume // every line up to auth is covered
	reason := ""
	switch {
	case k < 0 && ss.resume == 0:
		// Nothing in reach is sealed: history from before the ledger was
		// (callers that expect seals see Tail.Seal empty).
		tail.Seal = ""
		return tail, nil
	case k >= 0:
		m := &ss.members[k]
		err := ss.seals.Check(m.seg.Path, m.hash, m.seal)
		if errors.Is(err, ErrUnknownKey) {
			return tail, &CorruptError{File: m.seg.Path, Line: max(m.lastLine, 1), Kind: ProblemSeal,
				Msg: fmt.Sprintf("the newest seal (the gzip member at bytes %d to %d) does not verify: %v", m.start, m.end, err)}
		}
		if err == nil {
			auth = max(auth, m.lastSeq)
			break
		}
		reason = "the newest seal does not verify: " + err.Error()
		l := k - 1
		for ; l >= 0; l-- {
			if p := &ss.members[l]; len(p.seal) > 0 && ss.seals.Check(p.seg.Path, p.hash, p.seal) == nil {
				break
			}
		}
		switch {
		case l >= 0:
			auth = max(auth, ss.members[l].lastSeq)
		case ss.resume == 0:
			// No seal holds: what came before the first sealed member is
			// history from before the ledger was sealed.
			first := 0
			for len(ss.members[first].seal) == 0 {
				first++
			}
			if first > 0 {
				auth = ss.members[first-1].lastSeq
			}
		}
	}
	cut := len(ss.members)
	for i := range ss.members {
		if ss.members[i].lastSeq > auth {
			cut = i
			break
		}
	}
	if cut == len(ss.members) {
		tail.Seal = ss.lastSeal(cut)
		return tail, nil
	}
	if reason == "" {
		if c := &ss.members[cut]; len(c.seal) == 0 {
			reason = "the first of them is not sealed"
		} else if err := ss.seals.Check(c.seg.Path, c.hash, c.seal); err != nil {
			reason = "the seal of the first of them does not verify: " + err.Error()
		}
	}
	u := &UnsealedError{Reason: reason, Applied: ss.passed > auth}
	if cut > 0 {
		p := &ss.members[cut-1]
		u.Sealed = Tail{Seq: p.lastSeq, Hash: p.hash, TS: unixUTC(p.ts), Segment: p.seg, Seal: ss.lastSeal(cut)}
		u.Sealed.Segment.Size = p.end
	}
	for i := cut; i < len(ss.members); i++ {
		m := &ss.members[i]
		n := len(u.Files)
		if n == 0 || u.Files[n-1].File != m.seg.Path {
			f := UnsealedFile{File: m.seg.Path, Offset: m.start}
			if i > 0 && ss.members[i-1].seg.Path == m.seg.Path {
				f.Seq = ss.members[i-1].lastSeq
			}
			u.Files = append(u.Files, f)
			n++
		}
		f := &u.Files[n-1]
		f.Bytes = m.end - f.Offset
		f.Members++
		if m.lastLine >= m.firstLine {
			f.Lines += m.lastLine - m.firstLine + 1
		}
		if f.First == 0 {
			f.First = m.firstSeq
		}
	}
	return u.Sealed, u
}

// lastSealed is the index of the last sealed member before n; -1 if none.
func (ss *sealScan) lastSealed(n int) int {
	for i := n - 1; i >= 0; i-- {
		if len(ss.members[i].seal) > 0 {
			return i
		}
	}
	return -1
}

// lastSeal is the seal of the last member before n that holds a line.
func (ss *sealScan) lastSeal(n int) string {
	for i := n - 1; i >= 0; i-- {
		if ss.members[i].lastLine >= ss.members[i].firstLine {
			return string(ss.members[i].seal)
		}
	}
	return ""
}

// Unsealed is a copy of s that is not sealed: it reads every line, as an
// unsealed ledger does (for comparisons that must see what is there).
func (s *Store) Unsealed() *Store {
	c := *s
	c.seals = nil
	return &c
}

// QuarantineDir holds what astra took out of its files instead of
// deleting it: bytes after a sealed ledger's last seal, and files put
// back as the newest sealed commit had them. It is astra's, committed and
// sealed like the rest of var/.
const QuarantineDir = "var/quarantine"

// Quarantine moves what follows the sealed part of each file u names
// (the bytes after UnsealedFile.Offset) to dir/<file> (dir a repository
// path, such as var/quarantine/<when>; ".1", ".2", ... are added to a
// name already taken), then cuts the file there, removing a file left
// empty. Each copy is synced before its file is cut, so a crash in
// between leaves the bytes twice, never nowhere. A file that changed since
// u was found is refused. It returns the paths it wrote and changed, for
// the commit that records the move.
func Quarantine(root string, u *UnsealedError, dir string) ([]string, error) {
	var changed []string
	for _, f := range u.Files {
		data, err := repofs.ReadFile(root, f.File, maxInflated)
		if err != nil {
			return changed, err
		}
		if int64(len(data)) != f.Offset+f.Bytes {
			return changed, fmt.Errorf("%s changed since its unsealed part was found (%d bytes, not %d): read the ledger again", f.File, len(data), f.Offset+f.Bytes)
		}
		q, err := keep(root, path.Join(dir, f.File), data[f.Offset:])
		if err != nil {
			return changed, fmt.Errorf("keeping the unsealed part of %s in %s: %w", f.File, dir, err)
		}
		abs := filepath.Join(root, filepath.FromSlash(f.File))
		if f.Offset == 0 {
			err = os.Remove(abs)
		} else {
			err = replaceFile(abs, data[:f.Offset], true)
		}
		if err != nil {
			return append(changed, q), err
		}
		changed = append(changed, q, f.File)
	}
	return changed, nil
}

// keep writes data to a new file named rel, or rel.N when rel is taken,
// synced, and returns its path.
func keep(root, rel string, data []byte) (string, error) {
	for n := 0; ; n++ {
		name := rel
		if n > 0 {
			name += "." + strconv.Itoa(n)
		}
		f, err := repofs.OpenFile(root, name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		_, err = f.Write(data)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = os.Remove(filepath.Join(root, filepath.FromSlash(name)))
			return "", err
		}
		return name, nil
	}
}
