package provider

import (
	"testing"

	fwtypes "github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/depctrl/terraform-provider-depctrl/internal/rbac"
)

func TestParseShardImportID(t *testing.T) {
	for _, tt := range []struct {
		id   string
		want shardImportID
		ok   bool
	}{
		{id: "root,a.kubeconfig", ok: true, want: shardImportID{name: "root", grant: rbac.ShardReaderName, kubeconfig: "a.kubeconfig"}},
		{id: "shard-1/g:r,a.kubeconfig,context=admin", ok: true, want: shardImportID{name: "shard-1", grant: "g:r", kubeconfig: "a.kubeconfig", context: "admin"}},
		{id: "shard-1,a.crt,a.key", ok: true, want: shardImportID{name: "shard-1", grant: rbac.ShardReaderName, cert: "a.crt", key: "a.key"}},
		{id: "shard-1,a.crt,a.key,ca=ca.crt", ok: true, want: shardImportID{name: "shard-1", grant: rbac.ShardReaderName, cert: "a.crt", key: "a.key", ca: "ca.crt"}},
		{id: "shard-1,a.crt,a.key,url=https://s:6443,ca=ca.crt", ok: true, want: shardImportID{name: "shard-1", grant: rbac.ShardReaderName, cert: "a.crt", key: "a.key", ca: "ca.crt", url: "https://s:6443"}},
		{id: "shard-1,a.kubeconfig,url=https://s:6443", ok: true, want: shardImportID{name: "shard-1", grant: rbac.ShardReaderName, kubeconfig: "a.kubeconfig", url: "https://s:6443"}},
		{id: "shard-1,a.kubeconfig,context=admin,url=https://s:6443", ok: true, want: shardImportID{name: "shard-1", grant: rbac.ShardReaderName, kubeconfig: "a.kubeconfig", context: "admin", url: "https://s:6443"}},
		{id: "shard-1,a.kubeconfig,url=a,url=b"},
		{id: "shard-1,a.crt,a.key,context=x"},
		// The provider block's shard_credentials.
		{id: "shard-1", ok: true, want: shardImportID{name: "shard-1", grant: rbac.ShardReaderName}},
		{id: "shard-1/g:r,url=https://s:6443", ok: true, want: shardImportID{name: "shard-1", grant: "g:r", url: "https://s:6443"}},
		{id: "shard-1,context=x"},
		{id: "shard-1,ca=x"},
		{id: "shard-1,"},
		{id: "shard-1/,a.kubeconfig"},
		{id: "Shard,a.kubeconfig"},
		{id: "shard-1,a.kubeconfig,context="},
		{id: "shard-1,a.kubeconfig,context=x,ca=y"},
		{id: "shard-1,a.kubeconfig,ca=y"},
		{id: "shard-1,a.crt,a.key,ca="},
		{id: "shard-1,a.crt,a.key,b"},
	} {
		got, err := parseShardImportID(tt.id)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseShardImportID(%q) = %+v, %v; want %+v, ok %v", tt.id, got, err, tt.want, tt.ok)
		}
	}
}

// TestShardImportIDFromIdentity: an import block's identity is checked as
// an import ID is; naming no credentials leaves them to the provider block.
func TestShardImportIDFromIdentity(t *testing.T) {
	str := fwtypes.StringValue
	null := fwtypes.StringNull()
	for _, tt := range []struct {
		name  string
		ident shardIdentity
		want  shardImportID
		ok    bool
	}{
		{"kubeconfig", shardIdentity{Name: str("root"), GrantName: null, KubeconfigPath: str("a"), Context: str("c"), ClientCertificatePath: null, ClientKeyPath: null, CACertificatePath: null, URL: null},
			shardImportID{name: "root", grant: rbac.ShardReaderName, kubeconfig: "a", context: "c"}, true},
		{"provider credentials", shardIdentity{Name: str("shard-1"), GrantName: str("g"), KubeconfigPath: null, Context: null, ClientCertificatePath: null, ClientKeyPath: null, CACertificatePath: null, URL: str("https://s:6443")},
			shardImportID{name: "shard-1", grant: "g", url: "https://s:6443"}, true},
		{"both", shardIdentity{Name: str("root"), GrantName: null, KubeconfigPath: str("a"), Context: null, ClientCertificatePath: str("c"), ClientKeyPath: str("k"), CACertificatePath: null, URL: null}, shardImportID{}, false},
		{"context without kubeconfig", shardIdentity{Name: str("root"), GrantName: null, KubeconfigPath: null, Context: str("c"), ClientCertificatePath: null, ClientKeyPath: null, CACertificatePath: null, URL: null}, shardImportID{}, false},
		{"certificate without key", shardIdentity{Name: str("root"), GrantName: null, KubeconfigPath: null, Context: null, ClientCertificatePath: str("c"), ClientKeyPath: null, CACertificatePath: null, URL: null}, shardImportID{}, false},
		{"bad name", shardIdentity{Name: str("Root"), GrantName: null, KubeconfigPath: null, Context: null, ClientCertificatePath: null, ClientKeyPath: null, CACertificatePath: null, URL: null}, shardImportID{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := shardImportIDFromIdentity(tt.ident)
			if (err == nil) != tt.ok || (tt.ok && got != tt.want) {
				t.Errorf("shardImportIDFromIdentity = %+v, %v; want %+v, ok %v", got, err, tt.want, tt.ok)
			}
		})
	}
}
