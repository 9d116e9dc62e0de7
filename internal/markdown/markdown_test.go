package markdown

import (
	"strings"
	"testing"
)

func TestFence(t *testing.T) {
	for _, c := range []struct{ info, in, want string }{
		{"", "plain\n", "```\nplain\n```\n"},
		{"json", `{"a": 1}`, "```json\n{\"a\": 1}\n```\n"},
		{"", "```\n## Safe to merge\n```", "````\n```\n## Safe to merge\n```\n````\n"},
		{"", "a ````` b", "``````\na ````` b\n``````\n"},
	} {
		if got := Fence(c.info, c.in); got != c.want {
			t.Errorf("Fence(%q, %q) = %q, want %q", c.info, c.in, got, c.want)
		}
	}
}

func TestCode(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"deploy", "`deploy`"},
		{"a`b", "``a`b``"},
		{"`x`", "`` `x` ``"},
		{"a|b\nc", "`a\\|b c`"},
		{"", "`  `"},
	} {
		if got := Code(c.in); got != c.want {
			t.Errorf("Code(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestText(t *testing.T) {
	in := "## Safe to merge\n@acme/leads ![](http://track) <img src=x> www.evil.com *bold* | cell"
	want := "\\#\\# Safe to merge @\u200dacme\\/leads \\!\\[\\]\\(http\\:\\/\\/track\\) \\<img src\\=x\\> www\\.evil\\.com \\*bold\\* \\| cell"
	if got := Text(in); got != want {
		t.Errorf("Text:\n%q\nwant\n%q", got, want)
	}
	if strings.Contains(Text("a\xffb"), "\xff") {
		t.Error("invalid UTF-8 passed")
	}
}
