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
