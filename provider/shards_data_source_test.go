package provider

import (
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/depctrl/terraform-provider-depctrl/test/env"
)

func TestAccShardsDataSource_basic(t *testing.T) {
	e := accEnv(t, env.TwoShards)
	var shards []knownvalue.Check
	for _, s := range e.Shards {
		shards = append(shards, knownvalue.ObjectPartial(map[string]knownvalue.Check{
			"name":     knownvalue.StringExact(s.Name),
			"base_url": knownvalue.StringRegexp(regexp.MustCompile(`^https://`)),
			// sharded-test-server serves virtual workspaces from the shards.
			"virtual_workspace_url": knownvalue.StringRegexp(regexp.MustCompile(`^https://`)),
		}))
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: providerConfig(e) + "\ndata \"depctrl_shards\" \"all\" {}\n",
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("data.depctrl_shards.all", tfjsonpath.New("shards"), knownvalue.ListExact(shards)),
			},
		}},
	})
}
