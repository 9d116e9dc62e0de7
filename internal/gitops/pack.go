package gitops

import (
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
)

// Pack object type numbers (gitformat-pack).
const (
	packRefDelta = 7
	// minDeltaSize: smaller blobs are sent whole; a delta would not pay off.
	minDeltaSize = 1024
)

// writePack writes a version-2 pack holding the objects of set. When thin is
// set, a blob that replaced another at the same path is sent as a REF_DELTA
// against that older blob if the delta is less than half its size. The older
// blob is either on the remote already or in this pack; git receive-pack
// completes such a thin pack (as it does for `git push`), so a ledger segment
// that grew by a few KB costs a few KB, not the whole segment.
func (r *Repo) writePack(w io.Writer, set *objectSet, thin bool) error {
	sum := sha1.New()
	out := io.MultiWriter(w, sum)
	var hdr [12]byte
	copy(hdr[:], "PACK")
	binary.BigEndian.PutUint32(hdr[4:], 2)
	binary.BigEndian.PutUint32(hdr[8:], uint32(len(set.list)))
	if _, err := out.Write(hdr[:]); err != nil {
		return err
	}
	zw := zlib.NewWriter(io.Discard)
	for _, h := range set.list {
		obj, err := r.st.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			return fmt.Errorf("pack object %s: %w", h, err)
		}
		data, err := readObject(obj)
		if err != nil {
			return err
		}
		typ := int(obj.Type())
		var baseHash []byte
		if base, ok := set.base[h]; ok && thin && obj.Type() == plumbing.BlobObject && len(data) >= minDeltaSize {
			if delta, ok := r.blobDelta(base, data); ok {
				typ, data, baseHash = packRefDelta, delta, base[:]
			}
		}
		if _, err := out.Write(packObjectHeader(typ, len(data))); err != nil {
			return err
		}
		if _, err := out.Write(baseHash); err != nil {
			return err
		}
		zw.Reset(out)
		if _, err := zw.Write(data); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
	}
	_, err := w.Write(sum.Sum(nil))
	return err
}

// blobDelta returns a delta from blob base to data when it is worth sending.
func (r *Repo) blobDelta(base plumbing.Hash, data []byte) ([]byte, bool) {
	obj, err := r.st.EncodedObject(plumbing.BlobObject, base)
	if err != nil {
		return nil, false // base not available locally (shallow): send whole
	}
	src, err := readObject(obj)
	if err != nil {
		return nil, false
	}
	delta := packfile.DiffDelta(src, data)
	return delta, len(delta) < len(data)/2
}

func readObject(obj plumbing.EncodedObject) ([]byte, error) {
	rd, err := obj.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	data := make([]byte, obj.Size())
	if _, err := io.ReadFull(rd, data); err != nil {
		return nil, fmt.Errorf("read object %s: %w", obj.Hash(), err)
	}
	return data, nil
}

// packObjectHeader encodes an object's type and (inflated) size.
func packObjectHeader(typ, size int) []byte {
	b := []byte{byte(typ<<4) | byte(size&0x0f)}
	size >>= 4
	for size > 0 {
		b[len(b)-1] |= 0x80
		b = append(b, byte(size&0x7f))
		size >>= 7
	}
	return b
}
