package provider

import (
	"context"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/depctrl/terraform-provider-depctrl/test/check"
)

// TestShardValidateConfig: the combinations of read_resources,
// protected_resources, reindex and deferred_deletion that the grant cannot serve are refused
// when the configuration is validated, naming the attribute at fault; those
// it can serve, and those whose values are not known yet, pass.
func TestShardValidateConfig(t *testing.T) {
	set := func(elems ...string) tftypes.Value {
		vs := make([]tftypes.Value, 0, len(elems))
		for _, e := range elems {
			vs = append(vs, tftypes.NewValue(tftypes.String, e))
		}
		return tftypes.NewValue(tftypes.Set{ElementType: tftypes.String}, vs)
	}
	unknown := tftypes.NewValue(tftypes.Set{ElementType: tftypes.String}, tftypes.UnknownValue)
	vms, vpcs := set("virtualmachines.compute.example.io"), set("vpcs.network.example.io")
	for _, tt := range []struct {
		name string
		// The attributes set; every other one is null.
		attrs map[string]tftypes.Value
		// wantAttr is the attribute the error names and want its
		// summary and detail; both empty for no error.
		wantAttr, want string
	}{
		{name: "wildcard", attrs: nil},
		{name: "narrowed", attrs: map[string]tftypes.Value{"read_resources": vms, "protected_resources": vpcs}},
		{name: "narrowed with reindex", attrs: map[string]tftypes.Value{
			"read_resources": vms, "protected_resources": vpcs, "reindex": tftypes.NewValue(tftypes.Bool, true)}},
		{name: "a type both read and protected", attrs: map[string]tftypes.Value{"read_resources": vpcs, "protected_resources": vpcs}},
		// Deferred deletion adds to either grant delete on the protected
		// types, and only on those.
		{name: "wildcard with deferred_deletion", attrs: map[string]tftypes.Value{
			"protected_resources": vpcs, "deferred_deletion": tftypes.NewValue(tftypes.Bool, true)}},
		{
			// The wildcard grant would otherwise have to delete
			// everything on the shard.
			name:     "wildcard with deferred_deletion and no protected_resources",
			attrs:    map[string]tftypes.Value{"deferred_deletion": tftypes.NewValue(tftypes.Bool, true)},
			wantAttr: "deferred_deletion", want: `deferred_deletion needs protected_resources: .*delete only the types\s+listed`,
		},
		{
			// Delete on a whole group (or the core group) is more than
			// the protected types.
			name: "deferred_deletion with a group's every type protected",
			attrs: map[string]tftypes.Value{
				"read_resources": vms, "protected_resources": set("vpcs.network.example.io", "*.tenancy.kcp.io"), "deferred_deletion": tftypes.NewValue(tftypes.Bool, true)},
			wantAttr: "protected_resources", want: `name types: "\*.tenancy.kcp.io" names every type of its group`,
		},
		{
			name: "deferred_deletion with every core type protected", attrs: map[string]tftypes.Value{
				"protected_resources": set("*"), "deferred_deletion": tftypes.NewValue(tftypes.Bool, true)},
			wantAttr: "protected_resources", want: `name types: "\*" names every type`,
		},
		{name: "a group's every type protected without deferred_deletion", attrs: map[string]tftypes.Value{"read_resources": vms, "protected_resources": set("*.network.example.io")}},
		{name: "deferred_deletion not known with protected_resources alone", attrs: map[string]tftypes.Value{
			"protected_resources": vpcs, "deferred_deletion": tftypes.NewValue(tftypes.Bool, tftypes.UnknownValue)}},
		{name: "narrowed with deferred_deletion", attrs: map[string]tftypes.Value{
			"read_resources": vms, "protected_resources": vpcs, "deferred_deletion": tftypes.NewValue(tftypes.Bool, true)}},
		{
			// Deferred deletion does not stand in for the protected
			// types either: it could delete none of them.
			name:     "read_resources and deferred_deletion without protected_resources",
			attrs:    map[string]tftypes.Value{"read_resources": vms, "deferred_deletion": tftypes.NewValue(tftypes.Bool, true)},
			wantAttr: "read_resources", want: `read_resources needs protected_resources`,
		},
		{
			// The webhook could then patch no protected object: every new
			// reference is refused and nothing is settled.
			name: "read_resources without protected_resources", attrs: map[string]tftypes.Value{"read_resources": vms},
			wantAttr: "read_resources", want: `read_resources needs protected_resources: .*patch .*protected_resources.*cannot record on`,
		},
		{
			// Patch on the dependent types does not stand in for the
			// protected ones: the provider cannot tell which are which.
			name: "read_resources and reindex without protected_resources",
			attrs: map[string]tftypes.Value{
				"read_resources": set("vpcs.network.example.io", "virtualmachines.compute.example.io"), "reindex": tftypes.NewValue(tftypes.Bool, true)},
			wantAttr: "read_resources", want: `read_resources needs protected_resources`,
		},
		{
			name: "protected_resources empty", attrs: map[string]tftypes.Value{"read_resources": vms, "protected_resources": set()},
			wantAttr: "protected_resources", want: `at least 1`,
		},
		{
			name: "protected_resources without read_resources", attrs: map[string]tftypes.Value{"protected_resources": vpcs},
			wantAttr: "protected_resources", want: `protected_resources needs read_resources or deferred_deletion`,
		},
		{
			name: "reindex without read_resources", attrs: map[string]tftypes.Value{"reindex": tftypes.NewValue(tftypes.Bool, true)},
			wantAttr: "reindex", want: `reindex needs read_resources`,
		},
		// Not known yet (terraform validate, or values from another
		// resource): either may still turn out null, so the check waits
		// for the plan, which validates the configuration again.
		{name: "read_resources not known", attrs: map[string]tftypes.Value{"read_resources": unknown}},
		{name: "protected_resources not known", attrs: map[string]tftypes.Value{"read_resources": vms, "protected_resources": unknown}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			diags := validateShardConfig(t, tt.attrs)
			if tt.want == "" {
				for _, d := range diags {
					t.Errorf("unexpected %s: %s: %s", d.Severity, d.Summary, d.Detail)
				}
				return
			}
			if len(diags) != 1 {
				t.Fatalf("got %d diagnostics, want 1: %v", len(diags), diags)
			}
			d := diags[0]
			if d.Severity != tfprotov6.DiagnosticSeverityError {
				t.Errorf("severity = %s, want an error", d.Severity)
			}
			if want := tftypes.NewAttributePath().WithAttributeName(tt.wantAttr); !d.Attribute.Equal(want) {
				t.Errorf("attribute = %v, want %v", d.Attribute, want)
			}
			if msg := d.Summary + ": " + d.Detail; !regexp.MustCompile(`(?s)` + tt.want).MatchString(msg) {
				t.Errorf("got %q, want it to match %q", msg, tt.want)
			}
		})
	}
}

// validateShardConfig validates a depctrl_shard configuration of a shard
// reached with a kubeconfig, with attrs set, as Terraform asks the provider
// to, and returns what the provider said.
func validateShardConfig(t *testing.T, attrs map[string]tftypes.Value) []*tfprotov6.Diagnostic {
	t.Helper()
	server, err := testAccProtoV6ProviderFactories["depctrl"]()
	check.Must(t, err)
	typ, ok := shardSchemaType(t).(tftypes.Object)
	if !ok {
		t.Fatalf("the schema's type is %T, not an object", shardSchemaType(t))
	}
	vals := map[string]tftypes.Value{}
	for name, at := range typ.AttributeTypes {
		vals[name] = tftypes.NewValue(at, nil)
	}
	vals["name"] = tftypes.NewValue(tftypes.String, "shard-1")
	vals["kubeconfig_path"] = tftypes.NewValue(tftypes.String, "shard-1.kubeconfig")
	vals["webhook_users"] = tftypes.NewValue(tftypes.Set{ElementType: tftypes.String}, []tftypes.Value{tftypes.NewValue(tftypes.String, "depctrl-webhook")})
	for name, v := range attrs {
		vals[name] = v
	}
	config, err := tfprotov6.NewDynamicValue(typ, tftypes.NewValue(typ, vals))
	check.Must(t, err)
	resp, err := server.ValidateResourceConfig(context.Background(), &tfprotov6.ValidateResourceConfigRequest{TypeName: "depctrl_shard", Config: &config})
	check.Must(t, err)
	return resp.Diagnostics
}
