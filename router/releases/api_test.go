package releases

import "testing"

func TestLink(t *testing.T) {
	gh := &Client{Base: "https://api.github.com/repos/llamatray/llamatray/releases"}
	page := "https://github.com/llamatray/llamatray/releases/tag/v0.4.0"
	for _, tc := range []struct {
		base, htmlURL, tag, want string
	}{
		{htmlURL: page, tag: "v0.4.0", want: page},
		{htmlURL: "javascript:alert(1)", tag: "v0.4.0", want: page},
		{htmlURL: "http://github.com/llamatray/llamatray/releases/tag/v0.4.0", tag: "v0.4.0", want: page},
		{htmlURL: "https://api.github.com.evil.example/x", tag: "v0.4.0", want: page},
		{htmlURL: "ms-settings:windowsupdate", tag: "v0.4.0", want: page},
		{htmlURL: "javascript:alert(1)", tag: "v0.4.0?x=#y", want: "https://github.com/llamatray/llamatray/releases/tag/v0.4.0%3Fx=%23y"},
		{htmlURL: "javascript:alert(1)", tag: "", want: ""},
		{base: "https://mirror.example/llamatray.json", htmlURL: "javascript:alert(1)", tag: "v0.4.0", want: ""},
		{base: "https://mirror.example/llamatray.json", htmlURL: "https://mirror.example/v0.4.0", tag: "v0.4.0", want: "https://mirror.example/v0.4.0"},
		{base: "file:///etc/releases", htmlURL: "file:///etc/passwd", tag: "v0.4.0", want: ""},
	} {
		c := gh
		if tc.base != "" {
			c = &Client{Base: tc.base}
		}
		if got := c.Link(Release{TagName: tc.tag, HTMLURL: tc.htmlURL}); got != tc.want {
			t.Errorf("%s: Link(%q, tag %q) = %q, want %q", c.Base, tc.htmlURL, tc.tag, got, tc.want)
		}
	}
}
