package provider

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// privateState is stored with the resource but never shown: the objects
// as applied, with Secret data redacted to digests (see redact). Keys and
// credentials stay in the cluster; the provider reads them back when it
// needs them.
type privateState struct {
	Applied []map[string]interface{} `json:"applied"`
}

func (p *privateState) applied() []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, 0, len(p.Applied))
	for _, m := range p.Applied {
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out
}

type privateGetter interface {
	GetKey(ctx context.Context, key string) ([]byte, diag.Diagnostics)
}

func loadPrivate(ctx context.Context, p privateGetter) (*privateState, diag.Diagnostics) {
	data, diags := p.GetKey(ctx, privateKey)
	if diags.HasError() || len(data) == 0 {
		return &privateState{}, diags
	}
	ps := &privateState{}
	if err := json.Unmarshal(data, ps); err != nil {
		diags.AddError("Corrupt private state", fmt.Sprintf("decoding the stored runtime state: %v; `terraform apply -replace` rebuilds it", err))
	}
	return ps, diags
}

type privateSetter interface {
	SetKey(ctx context.Context, key string, value []byte) diag.Diagnostics
}

func savePrivate(ctx context.Context, p privateSetter, ps *privateState) diag.Diagnostics {
	data, err := json.Marshal(ps)
	if err != nil {
		var diags diag.Diagnostics
		diags.AddError("Cannot store runtime state", err.Error())
		return diags
	}
	return p.SetKey(ctx, privateKey, data)
}
