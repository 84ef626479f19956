/**
 * Source Regions from which each geography's system-defined inference profiles can be called
 * (Amazon Bedrock User Guide, "Supported Regions and models for inference profiles", 2025-11).
 * `global.` profiles are callable from every commercial Region.
 */
export const PROFILE_SOURCE_REGIONS: Readonly<Record<string, readonly string[]>> = {
  us: ['us-east-1', 'us-east-2', 'us-west-1', 'us-west-2'],
  'us-gov': ['us-gov-east-1', 'us-gov-west-1'],
  eu: [
    'eu-central-1',
    'eu-central-2',
    'eu-north-1',
    'eu-south-1',
    'eu-south-2',
    'eu-west-1',
    'eu-west-2',
    'eu-west-3',
  ],
  apac: [
    'ap-northeast-1',
    'ap-northeast-2',
    'ap-northeast-3',
    'ap-south-1',
    'ap-south-2',
    'ap-southeast-1',
    'ap-southeast-2',
    'ap-southeast-3',
    'ap-southeast-4',
  ],
  jp: ['ap-northeast-1', 'ap-northeast-3'],
  au: ['ap-southeast-2', 'ap-southeast-4'],
  ca: ['ca-central-1', 'ca-west-1'],
};

/** The geography prefix of a system-defined inference profile id (`us` of `us.anthropic…`), else undefined. */
export function profileGeography(modelId: string): string | undefined {
  const geo = modelId.split('.')[0] ?? '';
  return geo === 'global' || Object.hasOwn(PROFILE_SOURCE_REGIONS, geo) ? geo : undefined;
}
