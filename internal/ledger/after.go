package ledger

import (
	"bytes"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
)

// ReadAfter returns the events of seg that follow its first offset bytes:
// what was appended to the file since a version of it that was offset
// bytes long (what git holds of it), without reading what came before.
// offset must end a gzip member, as every append does. The events are
// checked as JSON, not against the chain (replay verifies the file).
func ReadAfter(root string, seg Segment, offset int64) ([]*Event, error) {
	f, err := openSegment(root, seg.Path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(f)
	if err != nil || len(data) == 0 {
		return nil, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err == nil {
		data, err = io.ReadAll(zr)
	}
	if err != nil {
		return nil, &CorruptError{File: seg.Path, Kind: gzipKind(err), Msg: fmt.Sprintf("after byte %d: %v", offset, err)}
	}
	var out []*Event
	for i, line := range bytes.Split(bytes.TrimSuffix(data, []byte{'\n'}), []byte{'\n'}) {
		e := new(Event)
		if err := Unmarshal(line, e); err != nil {
			return nil, &CorruptError{File: seg.Path, Kind: ProblemJSON, Msg: fmt.Sprintf("line %d after byte %d: %v", i+1, offset, err)}
		}
		out = append(out, e)
	}
	return out, nil
}
