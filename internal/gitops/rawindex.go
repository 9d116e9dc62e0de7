package gitops

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"sort"
	"time"

	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// errIndexFormat: the index uses a format editIndex does not handle (version
// 4, split or sparse index); updateIndex then uses go-git's codec instead.
var errIndexFormat = errors.New("index format not handled by the raw editor")

// Index file layout (gitformat-index): a 12-byte header, entries sorted by
// path, extensions, and a SHA-1 of all of it.
const (
	indexHeaderLen   = 12
	indexEntryFixed  = 62     // stat fields, mode, size, object id, flags
	indexFlagExt     = 0x4000 // an extended-flags word follows (version 3)
	indexNameMask    = 0x0fff
	indexTrailingSum = sha1.Size
)

// editIndex rewrites a version 2 or 3 index: entries for which drop returns
// true are removed, add is merged in (sorted by path), and every other entry
// is copied byte for byte, so flags go-git does not model (assume-unchanged)
// survive. Cache extensions that describe the old entries (cache tree,
// untracked cache, fsmonitor, offset tables) are dropped; git rebuilds them.
// Its cost is a copy of the file: no per-entry decoding or allocation.
func editIndex(data []byte, drop func(name string) bool, add []*index.Entry) ([]byte, error) {
	if len(data) < indexHeaderLen+indexTrailingSum || string(data[:4]) != "DIRC" {
		return nil, errors.New("index: bad signature")
	}
	version := binary.BigEndian.Uint32(data[4:8])
	if version != 2 && version != 3 {
		return nil, errIndexFormat
	}
	body := data[:len(data)-indexTrailingSum]
	trailer := data[len(body):]
	// (an all-zero trailer is git's index.skipHash)
	if sum := sha1.Sum(body); !bytes.Equal(sum[:], trailer) && !bytes.Equal(trailer, make([]byte, indexTrailingSum)) {
		return nil, errors.New("index: checksum mismatch (corrupt index; run `git reset` to rebuild it)")
	}
	count := binary.BigEndian.Uint32(data[8:12])

	sort.Slice(add, func(i, j int) bool { return add[i].Name < add[j].Name })
	out := make([]byte, indexHeaderLen, len(data)+len(add)*(indexEntryFixed+64))
	copy(out, data[:indexHeaderLen])
	var written uint32
	off := indexHeaderLen
	for i := uint32(0); i < count; i++ {
		if off+indexEntryFixed > len(body) {
			return nil, errors.New("index: truncated entry")
		}
		flags := binary.BigEndian.Uint16(body[off+60:])
		hdr := indexEntryFixed
		if flags&indexFlagExt != 0 {
			if version < 3 {
				return nil, errors.New("index: extended flags in a version 2 index")
			}
			hdr += 2
		}
		nameLen := int(flags & indexNameMask)
		if nameLen == indexNameMask { // long name: NUL-terminated
			n := bytes.IndexByte(body[off+hdr:], 0)
			if n < 0 {
				return nil, errors.New("index: unterminated entry name")
			}
			nameLen = n
		}
		size := (hdr + nameLen + 8) &^ 7
		if off+size > len(body) {
			return nil, errors.New("index: truncated entry")
		}
		name := body[off+hdr : off+hdr+nameLen]
		for len(add) > 0 && add[0].Name < string(name) {
			out = appendIndexEntry(out, add[0])
			add, written = add[1:], written+1
		}
		if !drop(string(name)) {
			out = append(out, body[off:off+size]...)
			written++
		}
		off += size
	}
	for _, e := range add {
		out = appendIndexEntry(out, e)
		written++
	}
	for off+8 <= len(body) { // extensions
		sig := string(body[off : off+4])
		size := int(binary.BigEndian.Uint32(body[off+4:]))
		if off+8+size > len(body) {
			return nil, errors.New("index: truncated extension " + sig)
		}
		switch {
		case sig == "REUC": // resolve-undo: independent of the entries
			out = append(out, body[off:off+8+size]...)
		case sig[0] >= 'A' && sig[0] <= 'Z': // optional cache: drop
		default: // "link" (split index), "sdir" (sparse index), ...
			return nil, errIndexFormat
		}
		off += 8 + size
	}
	binary.BigEndian.PutUint32(out[8:12], written)
	sum := sha1.Sum(out)
	return append(out, sum[:]...), nil
}

// appendIndexEntry encodes a stage-0 entry without extended flags.
func appendIndexEntry(out []byte, e *index.Entry) []byte {
	start := len(out)
	be := binary.BigEndian
	out = be.AppendUint32(out, unixSec(e.CreatedAt))
	out = be.AppendUint32(out, unixNsec(e.CreatedAt))
	out = be.AppendUint32(out, unixSec(e.ModifiedAt))
	out = be.AppendUint32(out, unixNsec(e.ModifiedAt))
	out = be.AppendUint32(out, e.Dev)
	out = be.AppendUint32(out, e.Inode)
	out = be.AppendUint32(out, uint32(e.Mode))
	out = be.AppendUint32(out, e.UID)
	out = be.AppendUint32(out, e.GID)
	out = be.AppendUint32(out, e.Size)
	out = append(out, e.Hash[:]...)
	out = be.AppendUint16(out, uint16(min(len(e.Name), indexNameMask)))
	out = append(out, e.Name...)
	for pad := (indexEntryFixed + len(e.Name) + 8) &^ 7; len(out)-start < pad; {
		out = append(out, 0)
	}
	return out
}

func unixSec(t time.Time) uint32 {
	if t.IsZero() {
		return 0
	}
	return uint32(t.Unix())
}

func unixNsec(t time.Time) uint32 {
	if t.IsZero() {
		return 0
	}
	return uint32(t.Nanosecond())
}
