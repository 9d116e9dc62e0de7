package runner

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"
)

// A spill's seal covers every file it holds: its events, and the tool
// writes it carries. Changing, adding or taking out any of them after it
// was sealed makes the spill one a run refuses.
func TestSpillSealCoversItsWrites(t *testing.T) {
	mac := func(name string, manifest []byte) []byte {
		return fmt.Appendf(nil, "%x", sha256.Sum256(append([]byte(name+"\n"), manifest...)))
	}
	s := &session{r: &Runner{opts: Options{
		SignSpill: func(name string, manifest []byte) ([]byte, error) { return mac(name, manifest), nil },
		VerifySpill: func(name string, manifest, sig []byte) error {
			if string(sig) != string(mac(name, manifest)) {
				return errors.New("bad seal")
			}
			return nil
		},
	}}}
	sealed := func() map[string][]byte {
		files := map[string][]byte{
			spillEventsFile:            []byte(`{"seq":1,"event":"run.completed","status":"ok","prev":""}` + "\n"),
			writesPrefix + "out/a.txt": []byte("a\n"),
		}
		if err := s.signSpill("r-1", files); err != nil {
			t.Fatal(err)
		}
		return files
	}
	if why := s.spillProblem("r-1", sealed()); why != "" {
		t.Fatalf("a sealed spill was refused: %s", why)
	}
	for name, change := range map[string]func(map[string][]byte){
		"a write changed":    func(f map[string][]byte) { f[writesPrefix+"out/a.txt"] = []byte("evil\n") },
		"a write added":      func(f map[string][]byte) { f[writesPrefix+"deploy.sh"] = []byte("evil\n") },
		"a write taken out":  func(f map[string][]byte) { delete(f, writesPrefix+"out/a.txt") },
		"a removal added":    func(f map[string][]byte) { f[writesRemoved] = []byte("README.md\n") },
		"the events changed": func(f map[string][]byte) { f[spillEventsFile] = append(f[spillEventsFile], '\n') },
	} {
		files := sealed()
		change(files)
		if why := s.spillProblem("r-1", files); why == "" {
			t.Errorf("%s: the spill was merged", name)
		}
	}
	if why := s.spillProblem("r-2", sealed()); why == "" {
		t.Error("a spill renamed was merged")
	}
}

// A spill an earlier astra sealed (its events alone, the seal over their
// bytes) is merged when it holds nothing else; with tool writes beside
// them, which that seal does not cover, it is refused.
func TestSpillSealedByAnEarlierAstra(t *testing.T) {
	mac := func(name string, body []byte) []byte {
		return fmt.Appendf(nil, "%x", sha256.Sum256(append([]byte(name+"\n"), body...)))
	}
	s := &session{r: &Runner{opts: Options{
		VerifySpill: func(name string, body, sig []byte) error {
			if string(sig) != string(mac(name, body)) {
				return errors.New("bad seal")
			}
			return nil
		},
	}}}
	events := []byte(`{"seq":1,"event":"run.completed","status":"ok","prev":""}` + "\n")
	old := map[string][]byte{spillEventsFile: events, spillSealFile: mac("r-1", events)}
	if why := s.spillProblem("r-1", old); why != "" {
		t.Fatalf("an earlier astra's spill was refused: %s", why)
	}
	old[writesPrefix+"deploy.sh"] = []byte("evil\n")
	if why := s.spillProblem("r-1", old); why == "" {
		t.Fatal("a write beside an earlier astra's sealed events was merged")
	}
}
