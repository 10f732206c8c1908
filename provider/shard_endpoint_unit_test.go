package provider

import "testing"

// TestSameEndpoint: a shard URL matches the Shard's base URL as an
// endpoint, as depctrl_shard's url documents: equal ports (443 when none
// is written), host names equal or resolving to a common address, scheme
// and path not compared.
func TestSameEndpoint(t *testing.T) {
	for _, tt := range []struct {
		url, base string
		same, err bool
	}{
		{url: "https://shard-1.example.com:6443", base: "https://shard-1.example.com:6443", same: true},
		{url: "https://shard-1.example.com:6443/clusters/system:admin", base: "https://shard-1.example.com:6443/", same: true},
		{url: "https://shard-1.example.com", base: "https://shard-1.example.com:443", same: true},
		{url: "http://shard-1.example.com:6443", base: "https://shard-1.example.com:6443", same: true},
		{url: "https://127.0.0.1:6443", base: "https://localhost:6443", same: true},
		{url: "https://shard-1.example.com:6444", base: "https://shard-1.example.com:6443"},
		{url: "https://shard-1.example.com", base: "https://shard-1.example.com:6443"},
		{url: "https://127.0.0.2:6443", base: "https://127.0.0.1:6443"},
		{url: "https://no-such-host.invalid:6443", base: "https://127.0.0.1:6443", err: true},
	} {
		same, err := sameEndpoint(tt.url, tt.base)
		if same != tt.same || (err != nil) != tt.err {
			t.Errorf("sameEndpoint(%q, %q) = %v, %v; want %v, error %v", tt.url, tt.base, same, err, tt.same, tt.err)
		}
	}
}
