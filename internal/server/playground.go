package server

import (
	"github.com/costgw/gateway/upstream/sim"
	"github.com/costgw/gateway/web/playground"
)

// playgroundConfig is what the playground is told: on the simulator, the demo
// key in the Authorization header; against a real upstream, no key, since the
// gateway holds none.
func playgroundConfig(onSimulator bool) playground.Config {
	c := playground.Config{Endpoint: "graphql", Query: starterQuery(onSimulator)}
	if onSimulator {
		c.Headers = map[string]string{"Authorization": "Bearer " + sim.DemoKey}
	}
	return c
}

// starterQuery is the first tab of the playground: budgets with their
// plannings, actuals and metrics.
func starterQuery(onSimulator bool) string {
	intro := `# costgw: GraphQL over the Cost Management API,
# here on its built-in simulator.
#
# The Headers tab below holds the demo key.
# Run the query with the ▶ button or Ctrl-Enter;
# the book icon on the left opens the schema docs.
`
	if !onSimulator {
		intro = `# costgw: GraphQL over the Cost Management API.
#
# Put your API key in the Headers tab below:
#   {"Authorization": "Bearer <your key>"}
# Run the query with the ▶ button or Ctrl-Enter;
# the book icon on the left opens the schema docs.
`
	}
	return intro + `
query Budgets {
  budgets(first: 5) {
    nodes {
      name
      status
      startDate
      endDate
      metrics {
        totalTarget
        totalActual
        variance
      }
      actuals {
        total
        byPeriod {
          period
          amount
        }
      }
      plannings {
        dimension1
        targetItems {
          dimensionValue
          amount
        }
        actuals {
          period
          amount
        }
      }
    }
    pageInfo {
      hasNextPage
      endCursor
    }
  }
}
`
}
