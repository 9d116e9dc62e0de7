package codeowners

import (
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// maxStates bounds a search: patterns are short, so real ones stay far
// below; past it, search says it found a path (the careful answer).
const maxStates = 200_000

// matches runs prog over the whole of s.
func matches(prog *syntax.Prog, s string) bool {
	set := closure(prog, []uint32{uint32(prog.Start)})
	for _, r := range s {
		if set = step(prog, set, r); len(set) == 0 {
			return false
		}
	}
	return accepts(prog, set)
}

// search looks for a path (non-empty segments between single slashes)
// that every prog in with matches (w first) and no prog in without does,
// and returns the shortest.
func search(w *syntax.Prog, with, without []*syntax.Prog) (string, bool) {
	progs := append(append([]*syntax.Prog{w}, with...), without...)
	alphabet := runes(progs)
	type node struct {
		sets   [][]uint32
		start  bool // at the start of a segment: no slash may follow
		parent int
		r      rune
	}
	first := node{start: true, parent: -1}
	for _, p := range progs {
		first.sets = append(first.sets, closure(p, []uint32{uint32(p.Start)}))
	}
	key := func(n node) string {
		var b strings.Builder
		if n.start {
			b.WriteByte('^')
		}
		for _, set := range n.sets {
			for _, pc := range set {
				b.WriteString(strconv.Itoa(int(pc)))
				b.WriteByte(',')
			}
			b.WriteByte(';')
		}
		return b.String()
	}
	nodes := []node{first}
	seen := map[string]bool{key(first): true}
	for i := 0; i < len(nodes); i++ {
		n := nodes[i]
		if !n.start && accepting(progs, n.sets, 1+len(with)) {
			var path []rune
			for j := i; nodes[j].parent >= 0; j = nodes[j].parent {
				path = append(path, nodes[j].r)
			}
			slices.Reverse(path)
			return string(path), true
		}
		if len(nodes) > maxStates {
			return "", true
		}
		for _, r := range alphabet {
			if r == '/' && n.start {
				continue
			}
			next := node{start: r == '/', parent: i, r: r}
			dead := false
			for k, p := range progs {
				set := step(p, n.sets[k], r)
				if len(set) == 0 && k < 1+len(with) {
					dead = true
					break
				}
				next.sets = append(next.sets, set)
			}
			if dead {
				continue
			}
			if k := key(next); !seen[k] {
				seen[k] = true
				nodes = append(nodes, next)
			}
		}
	}
	return "", false
}

// accepting: the first need progs accept, the others do not.
func accepting(progs []*syntax.Prog, sets [][]uint32, need int) bool {
	for k, p := range progs {
		if accepts(p, sets[k]) != (k < need) {
			return false
		}
	}
	return true
}

func accepts(prog *syntax.Prog, set []uint32) bool {
	for _, pc := range set {
		if prog.Inst[pc].Op == syntax.InstMatch {
			return true
		}
	}
	return false
}

// step is the set of instructions set reaches by reading r.
func step(prog *syntax.Prog, set []uint32, r rune) []uint32 {
	var next []uint32
	for _, pc := range set {
		in := &prog.Inst[pc]
		switch in.Op {
		case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
			if in.MatchRune(r) {
				next = append(next, in.Out)
			}
		}
	}
	return closure(prog, next)
}

// closure follows the instructions that read nothing, and keeps those that
// read a rune or match, sorted.
func closure(prog *syntax.Prog, pcs []uint32) []uint32 {
	seen := map[uint32]bool{}
	var out []uint32
	for len(pcs) > 0 {
		pc := pcs[len(pcs)-1]
		pcs = pcs[:len(pcs)-1]
		if seen[pc] {
			continue
		}
		seen[pc] = true
		in := &prog.Inst[pc]
		switch in.Op {
		case syntax.InstAlt, syntax.InstAltMatch:
			pcs = append(pcs, in.Out, in.Arg)
		case syntax.InstCapture, syntax.InstNop, syntax.InstEmptyWidth:
			pcs = append(pcs, in.Out)
		case syntax.InstFail:
		default:
			out = append(out, pc)
		}
	}
	slices.Sort(out)
	return out
}

// runes is an alphabet that stands for every rune: all the programs treat
// two runes alike unless a range bound lies between them, so the bounds
// and their neighbours give one rune of each kind.
func runes(progs []*syntax.Prog) []rune {
	set := map[rune]bool{'/': true, ' ': true, 0xE000: true}
	add := func(r rune) {
		// Control characters stand for their kind no better than the
		// neighbours kept, and would make witness paths unreadable.
		if r >= ' ' && r <= unicode.MaxRune {
			set[r] = true
		}
	}
	for _, p := range progs {
		for _, in := range p.Inst {
			switch in.Op {
			case syntax.InstRune, syntax.InstRune1:
				for _, r := range in.Rune {
					add(r - 1)
					add(r)
					add(r + 1)
				}
			}
		}
	}
	// 'a' first: the search tries runes in order, and a witness path reads
	// best in letters.
	out := []rune{'a'}
	for r := range set {
		if r != 'a' {
			out = append(out, r)
		}
	}
	slices.Sort(out[1:])
	return out
}
