import { Duration, Validations } from 'aws-cdk-lib';
import type { HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import {
  Alarm,
  AlarmStatusWidget,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  type IMetric,
  MathExpression,
  Metric,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { type ITopic, Subscription, SubscriptionProtocol, Topic } from 'aws-cdk-lib/aws-sns';
import { Construct, type IConstruct } from 'constructs';
import { OFFLINE_MODEL, type StackConfig } from './config.js';
import type { StepFunction } from './step-function.js';

/** Props of {@link Monitoring}. */
export interface MonitoringProps {
  config: StackConfig;
  /** The stack's functions by name. */
  functions: ReadonlyMap<string, StepFunction>;
  /** The channels' HTTP API. */
  api: HttpApi;
  /** The dashboard's name (unique in the account and Region; infra/lib/cld.ts `namePrefix`). */
  dashboardName: string;
  /** An existing topic every alarm notifies; default: `config.alarmTopicArn`'s, else one created here. */
  alarmTopic?: ITopic;
}

/** The HTTP API's 5xx responses in 5 minutes above which the API alarm fires. */
export const API_5XX_ALARM_THRESHOLD = 0;

/**
 * What a platform engineer watches (issue 24): the alarm topic every alarm of the construct notifies,
 * the HTTP API's 5xx alarm, and one CloudWatch dashboard.
 *
 * - Topic: the one given (`alarmTopic`, `cld:alarmTopicArn`), or one created here (TLS-only publishing, the
 *   AWS managed SNS key), with `cld:alarmEmail` subscribed when given. {@link notifyAllAlarms}
 *   adds it as the ALARM and OK action of every `AWS::CloudWatch::Alarm` in the stack, so an alarm
 *   added later cannot be forgotten.
 * - Dashboard (`<stack>[-<construct path>]-conversations`): the alarms' states of the enclosing construct; per function invocations, errors,
 *   throttles and p95 duration; Lambda's asynchronous-event age and drops; dead letters waiting;
 *   the API's requests, 4xx and 5xx; Bedrock input/output tokens and throttles of the configured
 *   model (AWS/Bedrock, by `ModelId`).
 */
export class Monitoring extends Construct {
  /** The topic every alarm notifies. */
  readonly alarmTopic: ITopic;
  /** The alarm on API Gateway 5xx responses of the HTTP API. */
  readonly api5xxAlarm: Alarm;
  readonly dashboard: Dashboard;

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    const { config } = props;
    if (props.alarmTopic) {
      this.alarmTopic = props.alarmTopic;
    } else if (config.alarmTopicArn) {
      this.alarmTopic = Topic.fromTopicArn(this, 'AlarmTopic', config.alarmTopicArn);
    } else {
      const topic = new Topic(this, 'AlarmTopic', {
        displayName: `cld ${config.stage} alarms`,
        enforceSSL: true,
      });
      this.alarmTopic = topic;
    }
    if (config.alarmEmail) {
      const subscription = new Subscription(this, 'AlarmEmail', {
        topic: this.alarmTopic,
        protocol: SubscriptionProtocol.EMAIL,
        endpoint: config.alarmEmail,
      });
      Validations.of(subscription).acknowledge({
        id: 'Serverless-SNSRedrivePolicy',
        reason:
          'An e-mail subscription to alarm notifications: a notification SNS cannot deliver has nowhere more useful ' +
          "to go, and the alarm's state stays in CloudWatch and on the dashboard.",
      });
    }

    this.api5xxAlarm = new Alarm(this, 'Api5xxAlarm', {
      alarmDescription:
        'cld http api: API Gateway answered 5xx (a function failed, timed out or was throttled)',
      metric: props.api.metricServerError({ period: Duration.minutes(5), statistic: 'Sum' }),
      threshold: API_5XX_ALARM_THRESHOLD,
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });

    const functions = [...props.functions];
    const perFunction = (title: string, metric: (step: StepFunction) => IMetric | undefined): GraphWidget =>
      new GraphWidget({
        title,
        width: 12,
        left: functions.flatMap(([name, step]) => {
          const m = metric(step);
          return m ? [(m as Metric).with({ label: name })] : [];
        }),
      });
    const minute = { period: Duration.minutes(1) };
    const bedrock = (metricName: string): Metric =>
      new Metric({
        namespace: 'AWS/Bedrock',
        metricName,
        dimensionsMap: { ModelId: config.modelId },
        statistic: 'Sum',
        ...minute,
      });
    this.dashboard = new Dashboard(this, 'Dashboard', {
      dashboardName: props.dashboardName,
      defaultInterval: Duration.hours(3),
    });
    this.dashboard.addWidgets(
      new AlarmStatusWidget({
        title: 'Alarms',
        width: 24,
        // The alarms of the construct holding this one (the whole Cld), not of the whole stack.
        alarms: alarmsOf(scope),
      }),
    );
    this.dashboard.addWidgets(
      perFunction('Steps per minute (invocations)', (s) =>
        s.function.metricInvocations({ statistic: 'Sum', ...minute }),
      ),
      perFunction('Step duration p95 (ms)', (s) =>
        s.function.metricDuration({ statistic: 'p95', ...minute }),
      ),
    );
    this.dashboard.addWidgets(
      perFunction('Errors', (s) => s.function.metricErrors({ statistic: 'Sum', ...minute })),
      perFunction('Throttles', (s) => s.function.metricThrottles({ statistic: 'Sum', ...minute })),
    );
    this.dashboard.addWidgets(
      perFunction('Asynchronous event age, max (ms)', (s) =>
        s.deadLetterQueue
          ? s.function.metric('AsyncEventAge', { statistic: 'Maximum', ...minute })
          : undefined,
      ),
      perFunction('Dead letters waiting', (s) =>
        s.deadLetterQueue?.metricApproximateNumberOfMessagesVisible({ statistic: 'Maximum', ...minute }),
      ),
    );
    this.dashboard.addWidgets(
      new GraphWidget({
        title: 'HTTP API requests',
        width: 12,
        left: [
          props.api.metricCount({ statistic: 'Sum', ...minute }).with({ label: 'requests' }),
          props.api.metricClientError({ statistic: 'Sum', ...minute }).with({ label: '4xx' }),
          props.api.metricServerError({ statistic: 'Sum', ...minute }).with({ label: '5xx' }),
        ],
      }),
      new GraphWidget({
        title:
          config.modelId === OFFLINE_MODEL
            ? 'Model tokens (offline model: none)'
            : `Model tokens (${config.modelId})`,
        width: 12,
        left: [
          bedrock('InputTokenCount').with({ label: 'input tokens' }),
          bedrock('OutputTokenCount').with({ label: 'output tokens' }),
        ],
        right: [
          bedrock('InvocationThrottles').with({ label: 'throttles' }),
          new MathExpression({
            expression: 'FILL(m1, 0)',
            usingMetrics: { m1: bedrock('InvocationClientErrors') },
            label: 'client errors',
            ...minute,
          }),
        ],
      }),
    );
  }
}

/** Every CloudWatch alarm defined under `scope`. */
export function alarmsOf(scope: IConstruct): Alarm[] {
  return scope.node.findAll().filter((child): child is Alarm => child instanceof Alarm);
}

/**
 * Adds `topic` as the ALARM and OK action of every alarm under `scope` (call once, after every
 * alarm is defined): an alarm nobody hears of is no alarm.
 * @returns how many alarms were wired
 */
export function notifyAllAlarms(scope: IConstruct, topic: ITopic): number {
  const action = new SnsAction(topic);
  const alarms = alarmsOf(scope);
  for (const alarm of alarms) {
    alarm.addAlarmAction(action);
    alarm.addOkAction(action);
  }
  return alarms.length;
}
