package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"

	"github.com/depctrl/terraform-provider-depctrl/test/env"
)

// withoutIdentity serves the provider as its versions before resource
// identity did: no identity schemas, and no identity in any response.
type withoutIdentity struct{ tfprotov6.ProviderServer }

func (w withoutIdentity) GetResourceIdentitySchemas(context.Context, *tfprotov6.GetResourceIdentitySchemasRequest) (*tfprotov6.GetResourceIdentitySchemasResponse, error) {
	return &tfprotov6.GetResourceIdentitySchemasResponse{IdentitySchemas: map[string]*tfprotov6.ResourceIdentitySchema{}}, nil
}

func (w withoutIdentity) ReadResource(ctx context.Context, req *tfprotov6.ReadResourceRequest) (*tfprotov6.ReadResourceResponse, error) {
	resp, err := w.ProviderServer.ReadResource(ctx, req)
	if resp != nil {
		resp.NewIdentity = nil
	}
	return resp, err
}

func (w withoutIdentity) PlanResourceChange(ctx context.Context, req *tfprotov6.PlanResourceChangeRequest) (*tfprotov6.PlanResourceChangeResponse, error) {
	resp, err := w.ProviderServer.PlanResourceChange(ctx, req)
	if resp != nil {
		resp.PlannedIdentity = nil
	}
	return resp, err
}

func (w withoutIdentity) ApplyResourceChange(ctx context.Context, req *tfprotov6.ApplyResourceChangeRequest) (*tfprotov6.ApplyResourceChangeResponse, error) {
	resp, err := w.ProviderServer.ApplyResourceChange(ctx, req)
	if resp != nil {
		resp.NewIdentity = nil
	}
	return resp, err
}

// TestAccIdentity_upgrade: a resource created by a provider version without
// resource identity gains its identity on the first refresh by this one,
// with no change planned, and then imports by it.
func TestAccIdentity_upgrade(t *testing.T) {
	if reason := cliUnderTest().identityUnsupported(); reason != "" {
		t.Skip(reason)
	}
	e := accEnv(t, env.SingleShard)
	org := testOrg(t, e)
	config := workspaceResourceConfig(e, org.Path, "upgraded", "")
	older := map[string]func() (tfprotov6.ProviderServer, error){
		"depctrl": func() (tfprotov6.ProviderServer, error) {
			s, err := providerserver.NewProtocol6WithError(New("0.9.0")())()
			return withoutIdentity{s}, err
		},
	}
	resource.Test(t, resource.TestCase{
		Steps: []resource.TestStep{
			{ProtoV6ProviderFactories: older, Config: config},
			withFactories(expectIdentity(config, "depctrl_workspace.test", map[string]knownvalue.Check{
				"path": knownvalue.StringExact(org.Path + ":upgraded"),
			})),
			withFactories(withConfig(importByIdentityPlansNothing("depctrl_workspace.test"), config)),
			// Last, a step with the configuration, which the destroy after
			// the test runs with.
			withFactories(resource.TestStep{Config: config}),
		},
	})
}

// withFactories runs step with this provider.
func withFactories(step resource.TestStep) resource.TestStep {
	step.ProtoV6ProviderFactories = testAccProtoV6ProviderFactories
	return step
}
