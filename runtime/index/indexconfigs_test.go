package index

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
)

type epochs map[string]string

func (e epochs) SetIndexConfiguration(cluster, uid string) { e[cluster] = uid }

// TestConfigurationsBehind: a configuration the registry trusts counts as
// current only while a fresh list of its shard has it at the version the
// registry saw, or an older one; one it does not trust never holds a
// confirmation up.
func TestConfigurationsBehind(t *testing.T) {
	meta := func(cluster, name, rv string, deleting bool) process.ShardMeta {
		m := process.ShardMeta{Cluster: cluster, Obj: metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv}}}
		if deleting {
			now := metav1.Now()
			m.Obj.DeletionTimestamp = &now
		}
		return m
	}
	onShardA := func(c string) bool { return c == "a" || c == "a2" }
	tests := []struct {
		name  string
		metas []process.ShardMeta
		want  string
	}{
		{"listed at the version seen", []process.ShardMeta{meta("a", v1alpha1.WebhookConfigurationName, "10", false)}, ""},
		{"listed at an older version", []process.ShardMeta{meta("a", v1alpha1.WebhookConfigurationName, "9", false)}, ""},
		{"edited since", []process.ShardMeta{meta("a", v1alpha1.WebhookConfigurationName, "11", false)}, "a"},
		{"being deleted", []process.ShardMeta{meta("a", v1alpha1.WebhookConfigurationName, "10", true)}, "a"},
		{"gone from its shard", []process.ShardMeta{meta("a", "another-configuration", "12", false)}, "a"},
		{"an untrusted one changed", []process.ShardMeta{meta("a", v1alpha1.WebhookConfigurationName, "10", false), meta("a2", v1alpha1.WebhookConfigurationName, "30", false)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Configurations{Registry: epochs{}}
			c.trust("a", "uid-a", "10")
			c.trust("b", "uid-b", "20") // on another shard: not listed here
			if got := c.Behind(tt.metas, onShardA); got != tt.want {
				t.Errorf("Behind = %q, want %q", got, tt.want)
			}
		})
	}
}
