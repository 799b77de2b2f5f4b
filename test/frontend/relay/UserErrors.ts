// What a budget form shows of a write's userErrors, by field: one plural
// fragment that the create, update and delete mutations all spread.
import { graphql } from "react-relay";

export const userErrorsFragment = graphql`
  fragment UserErrors_userErrors on UserError @relay(plural: true) {
    field
    message
    code
  }
`;
