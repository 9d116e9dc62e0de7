package cli

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ledgerSchema is schema/ledger-event.schema.json, compiled once.
var ledgerSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	return c.Compile("../../schema/ledger-event.schema.json")
})

// checkLedgerSchema validates every event of every ledger file under dir
// (var/…/*.ndjson.gz, outside .git) against the ledger event schema: an
// unknown field, an unknown kind or a wrong type fails. A line that is
// not JSON at all is damage a script made on purpose (repairs), not the
// schema's business.
func checkLedgerSchema(dir string) error {
	sch, err := ledgerSchema()
	if err != nil {
		return err
	}
	var problems []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return nil // a directory a tool made unreadable
		case d.IsDir() && d.Name() == ".git":
			return fs.SkipDir
		case d.IsDir() || !strings.HasSuffix(p, ".ndjson.gz"):
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return nil
		}
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil
		}
		sc := bufio.NewScanner(zr)
		sc.Buffer(nil, 64<<20)
		for n := 1; sc.Scan(); n++ {
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(sc.Bytes()))
			if err != nil {
				continue
			}
			if err := sch.Validate(v); err != nil {
				rel, _ := filepath.Rel(dir, p)
				problems = append(problems, fmt.Sprintf("%s:%d: %v\n%s", rel, n, err, sc.Bytes()))
			}
		}
		return nil
	})
	if err == nil && len(problems) > 0 {
		err = fmt.Errorf("ledger events the schema does not describe:\n%s", strings.Join(problems, "\n"))
	}
	return err
}
