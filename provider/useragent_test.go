package provider

import "testing"

// TestUserAgent: every server the provider calls sees its version; a build
// without one says dev.
func TestUserAgent(t *testing.T) {
	for _, tt := range []struct {
		conn *Connection
		want string
	}{
		{&Connection{version: "1.4.0"}, "terraform-provider-depctrl/1.4.0"},
		{&Connection{}, "terraform-provider-depctrl/dev"},
		{nil, "terraform-provider-depctrl/dev"},
	} {
		if got := tt.conn.userAgent(); got != tt.want {
			t.Errorf("userAgent() = %q, want %q", got, tt.want)
		}
	}
}

// TestReleaseVersion: only a release version has a published image of its
// tag; a development build (dev, a commit) is warned about at plan.
func TestReleaseVersion(t *testing.T) {
	for v, want := range map[string]bool{
		"1.4.0": true, "v1.4.0": true, "1.4.0-rc.1": true,
		"dev": false, "test": false, "0.0.0-dev-4bbc5b7": false, "0.0.0-dev-4bbc5b7-dirty": false, "1.0.0-devel": true, "4bbc5b7": false, "1.4": false, "": false,
	} {
		if got := isRelease(v); got != want {
			t.Errorf("isRelease(%q) = %v, want %v", v, got, want)
		}
	}
}
