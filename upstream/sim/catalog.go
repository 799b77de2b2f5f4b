package sim

// The catalogs below are returned by functions rather than held in package
// variables so that no global state exists, mutable or not.

// orgSpec describes one organization's seed data.
type orgSpec struct {
	id, name, domain string
	clientID         int
	entitled         bool
	stream           uint64  // PCG stream of this organization's generators
	dailySpend       float64 // dollars per day at the start of the cost table
	monthlyGrowth    float64
	services         []serviceSpec
	accounts         []accountSpec
	users            [][2]string // first and last names
	teams            []string
	reports          []reportSpec
	canvases         []string
	timezones        []string
	budgets          int
	recommendations  int
	anomalies        int
	notifications    int
}

// serviceSpec is one AWS service as it appears in the cost and usage report.
type serviceSpec struct {
	name        string  // product_product_name
	slug        string  // short name used in recommendation and anomaly ids
	anomalyName string  // the name anomaly detection reports
	share       float64 // share of the organization's spend
	weekend     float64 // weekend factor: compute scales down, storage does not
}

// accountSpec is one billing account.
type accountSpec struct {
	name  string // billing_account_name
	env   string // short environment tag used in resource names
	share float64
}

// reportSpec is an Explorer report a budget can be based on: it plans by one
// column and covers some of its values.
type reportSpec struct {
	name   string
	focus  string // word used in budget names
	column int
	values []string
}

// recTemplate is a kind of cost recommendation for one service.
type recTemplate struct {
	name, category, action, effort string
	minSave, maxSave               float64 // dollars per month
	resource                       string  // resource id kind, see resourceID
}

const (
	svcEC2         = "Amazon Elastic Compute Cloud"
	svcRDS         = "Amazon Relational Database Service"
	svcS3          = "Amazon Simple Storage Service"
	svcEKS         = "Amazon Elastic Kubernetes Service"
	svcLambda      = "AWS Lambda"
	svcCloudFront  = "Amazon CloudFront"
	svcDynamoDB    = "Amazon DynamoDB"
	svcElastiCache = "Amazon ElastiCache"
	svcVPC         = "Amazon Virtual Private Cloud"
	svcCloudWatch  = "AmazonCloudWatch"
	svcRedshift    = "Amazon Redshift"
	svcELB         = "Elastic Load Balancing"
	svcECS         = "Amazon Elastic Container Service"
	svcOpenSearch  = "Amazon OpenSearch Service"
	svcSQS         = "Amazon Simple Queue Service"
	svcRoute53     = "Amazon Route 53"
	svcGlue        = "AWS Glue"
	svcKinesis     = "Amazon Kinesis"
	svcEFS         = "Amazon Elastic File System"
	svcSageMaker   = "Amazon SageMaker"
)

// orgSpecs returns organizations one, two and three.
func orgSpecs() []*orgSpec {
	one := &orgSpec{
		id: "org-1001", name: "Northwind Traders", domain: "northwind.example", clientID: 1001,
		entitled: true, stream: 1001, dailySpend: 9200, monthlyGrowth: 0.012,
		services: []serviceSpec{
			{svcEC2, "ec2", "Amazon Elastic Compute Cloud - Compute", 0.30, 0.80},
			{svcRDS, "rds", "Amazon Relational Database Service", 0.13, 0.97},
			{svcS3, "s3", "Amazon Simple Storage Service", 0.07, 0.98},
			{svcEKS, "eks", "Amazon Elastic Kubernetes Service", 0.08, 0.85},
			{svcLambda, "lambda", "AWS Lambda", 0.04, 0.70},
			{svcCloudFront, "cloudfront", "Amazon CloudFront", 0.05, 0.90},
			{svcDynamoDB, "dynamodb", "Amazon DynamoDB", 0.05, 0.90},
			{svcElastiCache, "elasticache", "Amazon ElastiCache", 0.04, 1.00},
			{svcVPC, "vpc", "Amazon Virtual Private Cloud", 0.05, 0.90},
			{svcCloudWatch, "cloudwatch", "AmazonCloudWatch", 0.04, 0.90},
			{svcRedshift, "redshift", "Amazon Redshift", 0.09, 1.00},
			{svcELB, "elb", "Elastic Load Balancing", 0.03, 0.90},
		},
		accounts: []accountSpec{
			{"Production", "prod", 0.42},
			{"Data Platform", "data", 0.20},
			{"Staging", "stg", 0.12},
			{"Development", "dev", 0.10},
			{"Shared Services", "shared", 0.10},
			{"Security", "sec", 0.06},
		},
		users: [][2]string{
			{"Dana", "Whitfield"}, {"Marcus", "Oyelaran"}, {"Priya", "Raghunathan"},
			{"Tomás", "Herrera"}, {"Elena", "Sokolova"}, {"Kenji", "Watanabe"},
		},
		teams: []string{
			"Platform Engineering", "Data Engineering", "Payments", "Search",
			"Mobile", "Growth", "Security", "Machine Learning",
		},
		reports: []reportSpec{
			{"Compute Services", "Compute", colService, []string{svcEC2, svcEKS, svcLambda, svcElastiCache}},
			{"Storage & Databases", "Storage", colService, []string{svcS3, svcRDS, svcDynamoDB, svcRedshift}},
			{"Network & Delivery", "Network", colService, []string{svcCloudFront, svcVPC, svcELB, svcCloudWatch}},
			{"AWS Spend by Account", "Cloud", colAccount, []string{"Production", "Data Platform", "Staging", "Development", "Shared Services", "Security"}},
			{"Production Workloads", "Production", colAccount, []string{"Production", "Data Platform", "Shared Services"}},
		},
		canvases:        []string{"Unit economics overview", "Team showback", "Executive cost summary", "Kubernetes efficiency"},
		timezones:       []string{"America/New_York", "America/New_York", "America/Chicago", "America/Los_Angeles", "Europe/London"},
		budgets:         24,
		recommendations: 340,
		anomalies:       260,
		notifications:   36,
	}
	two := &orgSpec{
		id: "org-2002", name: "Bluefin Analytics", domain: "bluefin.example", clientID: 2002,
		entitled: true, stream: 2002, dailySpend: 3400, monthlyGrowth: 0.018,
		services: []serviceSpec{
			{svcECS, "ecs", "Amazon Elastic Container Service", 0.28, 0.85},
			{svcOpenSearch, "opensearch", "Amazon OpenSearch Service", 0.14, 1.00},
			{svcSQS, "sqs", "Amazon Simple Queue Service", 0.05, 0.80},
			{svcRoute53, "route53", "Amazon Route 53", 0.02, 1.00},
			{svcGlue, "glue", "AWS Glue", 0.16, 0.60},
			{svcKinesis, "kinesis", "Amazon Kinesis", 0.12, 0.95},
			{svcEFS, "efs", "Amazon Elastic File System", 0.08, 1.00},
			{svcSageMaker, "sagemaker", "Amazon SageMaker", 0.15, 0.75},
		},
		accounts: []accountSpec{
			{"Bluefin Production", "prod", 0.55},
			{"Bluefin Analytics", "analytics", 0.25},
			{"Bluefin Development", "dev", 0.12},
			{"Bluefin Sandbox", "sbx", 0.08},
		},
		users: [][2]string{{"Amara", "Okafor"}, {"Lukas", "Brandt"}, {"Sofia", "Marchetti"}, {"Jordan", "Blake"}},
		teams: []string{"Analytics Platform", "Data Science", "Ingestion", "Customer Insights", "Infrastructure"},
		reports: []reportSpec{
			{"Container Platform", "Containers", colService, []string{svcECS, svcEFS, svcSQS}},
			{"Data & Analytics", "Analytics", colService, []string{svcGlue, svcKinesis, svcOpenSearch, svcSageMaker}},
			{"Spend by Account", "Cloud", colAccount, []string{"Bluefin Production", "Bluefin Analytics", "Bluefin Development", "Bluefin Sandbox"}},
			{"Messaging & DNS", "Messaging", colService, []string{svcSQS, svcRoute53, svcKinesis}},
		},
		canvases:        []string{"Pipeline cost per run", "Model training spend", "Weekly leadership summary"},
		timezones:       []string{"Europe/Berlin", "Europe/London", "Asia/Singapore", "Australia/Sydney", "America/New_York"},
		budgets:         9,
		recommendations: 120,
		anomalies:       80,
		notifications:   23,
	}
	three := &orgSpec{
		id: "org-3003", name: "Tallgrass Labs", domain: "tallgrass.example", clientID: 3003,
		entitled: false, stream: 3003,
		users: [][2]string{{"Riley", "Chen"}},
	}
	return []*orgSpec{one, two, three}
}

// recTemplates returns the recommendation kinds by service name.
func recTemplates() map[string][]recTemplate {
	return map[string][]recTemplate{
		svcEC2: {
			{"Rightsize underutilized EC2 instances", "Compute", "Rightsize", "Low", 60, 1400, "ec2-instance"},
			{"Terminate idle EC2 instances", "Compute", "Terminate", "Low", 40, 900, "ec2-instance"},
			{"Migrate EC2 instances to Graviton", "Compute", "Modernize", "Medium", 80, 1800, "ec2-instance"},
			{"Purchase Compute Savings Plans", "Compute", "Purchase", "Low", 600, 9000, "account"},
			{"Delete unattached EBS volumes", "Storage", "Delete", "Low", 8, 320, "ebs-volume"},
			{"Convert gp2 EBS volumes to gp3", "Storage", "Modify", "Low", 5, 240, "ebs-volume"},
			{"Delete old EBS snapshots", "Storage", "Delete", "Low", 4, 180, "ebs-snapshot"},
		},
		svcRDS: {
			{"Rightsize overprovisioned RDS instances", "Database", "Rightsize", "Medium", 90, 2200, "rds-db"},
			{"Purchase RDS Reserved Instances", "Database", "Purchase", "Low", 300, 5200, "rds-db"},
			{"Stop idle RDS instances in non-production", "Database", "Stop", "Low", 50, 700, "rds-db"},
		},
		svcS3: {
			{"Move infrequently accessed S3 objects to Intelligent-Tiering", "Storage", "Modify", "Low", 20, 900, "s3-bucket"},
			{"Add lifecycle rules to expire old S3 object versions", "Storage", "Modify", "Low", 10, 600, "s3-bucket"},
			{"Abort incomplete S3 multipart uploads", "Storage", "Delete", "Low", 2, 120, "s3-bucket"},
		},
		svcEKS: {
			{"Rightsize EKS node groups", "Containers", "Rightsize", "Medium", 120, 2600, "eks-nodegroup"},
			{"Run EKS batch workloads on Spot capacity", "Containers", "Modify", "High", 200, 3400, "eks-nodegroup"},
		},
		svcLambda: {
			{"Reduce Lambda memory allocation", "Compute", "Rightsize", "Low", 5, 260, "lambda-function"},
			{"Switch Lambda functions to arm64", "Compute", "Modernize", "Low", 4, 180, "lambda-function"},
		},
		svcCloudFront: {
			{"Enable CloudFront compression", "Network", "Modify", "Low", 15, 420, "cloudfront-distribution"},
			{"Review CloudFront price class", "Network", "Modify", "Low", 30, 700, "cloudfront-distribution"},
		},
		svcDynamoDB: {
			{"Switch DynamoDB tables to on-demand capacity", "Database", "Modify", "Low", 25, 900, "dynamodb-table"},
			{"Reduce DynamoDB provisioned capacity", "Database", "Rightsize", "Low", 20, 700, "dynamodb-table"},
		},
		svcElastiCache: {
			{"Rightsize ElastiCache clusters", "Database", "Rightsize", "Medium", 60, 1200, "elasticache-cluster"},
			{"Delete idle ElastiCache clusters", "Database", "Terminate", "Low", 80, 900, "elasticache-cluster"},
		},
		svcVPC: {
			{"Delete idle NAT gateways", "Network", "Delete", "Low", 32, 140, "nat-gateway"},
			{"Release unattached Elastic IP addresses", "Network", "Delete", "Low", 3, 40, "elastic-ip"},
			{"Add VPC gateway endpoints for S3 traffic", "Network", "Modify", "Medium", 40, 900, "vpc"},
		},
		svcCloudWatch: {
			{"Set retention on CloudWatch log groups", "Monitoring", "Modify", "Low", 10, 500, "log-group"},
		},
		svcRedshift: {
			{"Pause idle Redshift clusters", "Analytics", "Stop", "Low", 200, 2400, "redshift-cluster"},
			{"Purchase Redshift Reserved Nodes", "Analytics", "Purchase", "Low", 500, 4800, "redshift-cluster"},
		},
		svcELB: {
			{"Delete idle load balancers", "Network", "Delete", "Low", 16, 60, "load-balancer"},
		},
		svcECS: {
			{"Rightsize ECS task definitions", "Containers", "Rightsize", "Medium", 40, 1600, "ecs-service"},
			{"Run ECS services on Fargate Spot", "Containers", "Modify", "Medium", 60, 1900, "ecs-service"},
			{"Purchase Compute Savings Plans", "Compute", "Purchase", "Low", 300, 4200, "account"},
		},
		svcOpenSearch: {
			{"Rightsize OpenSearch domains", "Analytics", "Rightsize", "Medium", 80, 1500, "opensearch-domain"},
			{"Purchase OpenSearch Reserved Instances", "Analytics", "Purchase", "Low", 200, 2600, "opensearch-domain"},
			{"Move old OpenSearch indices to UltraWarm", "Analytics", "Modify", "Medium", 50, 1100, "opensearch-domain"},
		},
		svcSQS: {
			{"Enable SQS long polling", "Application Integration", "Modify", "Low", 3, 140, "sqs-queue"},
		},
		svcRoute53: {
			{"Delete unused Route 53 hosted zones", "Network", "Delete", "Low", 1, 12, "hosted-zone"},
		},
		svcGlue: {
			{"Reduce AWS Glue job DPU allocation", "Analytics", "Rightsize", "Low", 30, 1300, "glue-job"},
			{"Enable Glue Flex execution for non-urgent jobs", "Analytics", "Modify", "Low", 25, 900, "glue-job"},
		},
		svcKinesis: {
			{"Reduce Kinesis shard count", "Analytics", "Rightsize", "Medium", 30, 800, "kinesis-stream"},
			{"Switch Kinesis streams to on-demand mode", "Analytics", "Modify", "Low", 20, 600, "kinesis-stream"},
		},
		svcEFS: {
			{"Enable EFS Infrequent Access lifecycle", "Storage", "Modify", "Low", 15, 700, "efs-filesystem"},
		},
		svcSageMaker: {
			{"Stop idle SageMaker notebook instances", "Machine Learning", "Stop", "Low", 40, 900, "sagemaker-notebook"},
			{"Rightsize SageMaker endpoints", "Machine Learning", "Rightsize", "Medium", 120, 2400, "sagemaker-endpoint"},
			{"Purchase SageMaker Savings Plans", "Machine Learning", "Purchase", "Low", 300, 3600, "account"},
		},
	}
}

// workloads returns names used in resource identifiers.
func workloads() []string {
	return []string{
		"orders", "checkout", "catalog", "search", "payments", "inventory", "analytics", "events",
		"billing", "auth", "reporting", "etl", "ingest", "notifications", "profiles", "pricing",
	}
}

// regions returns AWS regions with how often each appears.
func regions() ([]string, []float64) {
	return []string{"us-east-1", "us-east-2", "us-west-2", "eu-west-1", "eu-central-1", "ap-southeast-1", "ap-northeast-1"},
		[]float64{0.38, 0.14, 0.18, 0.12, 0.08, 0.06, 0.04}
}
